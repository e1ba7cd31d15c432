import { useEffect, useRef, useState } from "react";
import { sessionStore } from "../model/session.ts";
import { shownEmail, useUsers } from "../model/users.ts";
import { Avatar } from "./Avatar.tsx";
import { OwnStatusMenuItems } from "./OwnStatus.tsx";
import { t } from "../i18n.ts";

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
      <button type="button" className="user-menu-button" aria-haspopup="menu" aria-expanded={open} onClick={() => setOpen(!open)}>
        <Avatar url={me?.avatar_url ?? null} name={me?.full_name ?? ""} small />
        <span className="user-menu-name">{me?.full_name ?? t("Me")}</span>
      </button>
      {open && (
        <div className="menu" role="menu">
          <div className="menu-info">{me && shownEmail(me)}</div>
          <OwnStatusMenuItems onDone={() => setOpen(false)} />
          <a role="menuitem" href="#settings/profile" onClick={() => setOpen(false)}>
            {t("Personal settings")}
          </a>
          {(me?.role === 100 || me?.role === 200) && (
            <a role="menuitem" href="#organization/organization-profile" onClick={() => setOpen(false)}>
              {t("Organization settings")}
            </a>
          )}
          <button type="button" role="menuitem" onClick={() => void sessionStore.logOut()}>
            {t("Log out")}
          </button>
        </div>
      )}
    </div>
  );
}
