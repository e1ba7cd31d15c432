// Parts of a message row beyond its rendered HTML: long messages condensed
// behind "Show more" (Zulip condenses a message taller than 65% of the window
// to a few lines), and messages of muted users hidden behind "Show message".
import { useLayoutEffect, useRef, useState, type ReactNode } from "react";
import { t } from "../i18n.ts";
import { mutingStore } from "../model/muting.ts";

/** Per message, whether the reader expanded it: kept when the row leaves the screen and comes back. */
const expanded = new Map<number, boolean>();

export function CollapsibleContent({ messageId, children }: { messageId: number; children: ReactNode }) {
  const innerRef = useRef<HTMLDivElement>(null);
  const [long, setLong] = useState(false);
  const [open, setOpen] = useState(() => expanded.get(messageId) ?? false);
  useLayoutEffect(() => {
    const inner = innerRef.current;
    if (!inner) return;
    // Measured again as images load or the window changes height.
    const measure = () => setLong(inner.offsetHeight > document.documentElement.offsetHeight * 0.65);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(inner);
    window.addEventListener("resize", measure);
    return () => {
      observer.disconnect();
      window.removeEventListener("resize", measure);
    };
  }, []);
  const toggle = () => {
    expanded.set(messageId, !open);
    setOpen(!open);
  };
  const condensed = long && !open;
  return (
    <>
      <div className={condensed ? "message-body condensed" : "message-body"}>
        <div ref={innerRef}>{children}</div>
      </div>
      {long && (
        <button type="button" className="condense-toggle" aria-expanded={open} onClick={toggle}>
          {open ? t("Show less") : t("Show more")}
        </button>
      )}
    </>
  );
}

export function MutedMessage({ messageId }: { messageId: number }) {
  return (
    <div className="muted-message">
      {t("This message was hidden because you have muted the sender.")}{" "}
      <button type="button" className="link-button" onClick={() => mutingStore.reveal(messageId)}>
        {t("Show message")}
      </button>
    </div>
  );
}
