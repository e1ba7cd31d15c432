import { useState } from "react";

/** A user's avatar; their initials when the image cannot be loaded. */
export function Avatar({ url, name, small }: { url: string | null; name: string; small?: boolean }) {
  const [failed, setFailed] = useState(false);
  const className = small ? "avatar small" : "avatar";
  if (!url || failed) {
    const initials = name
      .split(/\s+/)
      .filter(Boolean)
      .slice(0, 2)
      .map((w) => w[0]!.toUpperCase())
      .join("");
    let hue = 0;
    for (const ch of name) hue = (hue * 31 + ch.charCodeAt(0)) % 360;
    return (
      <span className={`${className} initials`} style={{ background: `hsl(${hue} 45% 32%)` }} aria-hidden="true">
        {initials || "?"}
      </span>
    );
  }
  return <img className={className} src={url} alt="" loading="lazy" onError={() => setFailed(true)} />;
}
