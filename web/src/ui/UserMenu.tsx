import { useEffect, useRef, useState } from "react";
import { sessionStore } from "../model/session.ts";
import { useUsers } from "../model/users.ts";
import { Avatar } from "./Avatar.tsx";

export function UserMenu() {
  const me = useUsers((s) => s.byId[s.selfId]);
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent | KeyboardEvent) => {
      if (e instanceof KeyboardEvent ? e.key === "Escape" : !ref.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("mousedown", close);
    document.addEventListener("keydown", close);
    return () => {
      document.removeEventListener("mousedown", close);
      document.removeEventListener("keydown", close);
    };
  }, [open]);
  return (
    <div className="user-menu" ref={ref}>
      <button type="button" className="user-menu-button" aria-label={me?.full_name ?? "Me"} aria-haspopup="menu" aria-expanded={open} onClick={() => setOpen(!open)}>
        <Avatar url={me?.avatar_url ?? null} name={me?.full_name ?? ""} small />
        <span>{me?.full_name ?? "Me"}</span>
      </button>
      {open && (
        <div className="menu" role="menu">
          <div className="menu-info">{me?.email}</div>
          <button type="button" role="menuitem" onClick={() => void sessionStore.logOut()}>
            Log out
          </button>
        </div>
      )}
    </div>
  );
}
