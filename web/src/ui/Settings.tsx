// Personal settings (#settings/profile): name and avatar, custom profile
// fields, password, display preferences (language, time format, home view,
// theme, time zone), notifications, per channel and per topic. Loaded on
// demand (MainView imports this module only when the page opens). Changes go through PATCH /settings (and the
// avatar endpoints); the page shows what the events then say.
import { useRef, useState, type FormEvent, type ReactNode } from "react";
import { api, postFile } from "../api/client.ts";
import { notificationsStore } from "../model/notifications.ts";
import { useSettings } from "../model/settings.ts";
import "../styles/settings-admin.css";
import { t } from "../i18n.ts";
import { Bots } from "./admin/Bots.tsx";
import { ChannelNotifications, TopicSettings } from "./settings/ChannelNotifications.tsx";
import { Display } from "./settings/Display.tsx";
import { ProfileFields } from "./settings/ProfileFields.tsx";
import { saveSetting, SectionNav } from "./settings/shared.tsx";
import { useProfileFields } from "../model/profile-fields.ts";
import { Avatar } from "./Avatar.tsx";
import { useSelf } from "./people.ts";
import { StatusLine } from "./StatusLine.tsx";

function useSaver(): { status: ReactNode; run: (label: string, action: () => Promise<unknown>) => Promise<boolean> } {
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  return {
    status: <StatusLine status={message} />,
    async run(label, action) {
      try {
        await action();
        setMessage({ ok: true, text: t("{{label}}: saved.", { label }) });
        return true;
      } catch (e) {
        setMessage({ ok: false, text: e instanceof Error ? e.message : String(e) });
        return false;
      }
    },
  };
}

/** email_address_visibility values in the order of Zulip's menu, widest audience first. */
const EMAIL_VISIBILITY: [number, () => string][] = [
  [1, () => t("Admins, moderators, members and guests")],
  [2, () => t("Admins, moderators and members")],
  [5, () => t("Admins and moderators")],
  [3, () => t("Admins only")],
  [4, () => t("Nobody")],
];

function Profile() {
  const self = useSelf();
  const visibility = useSettings((s) => s.settings.email_address_visibility);
  const [name, setName] = useState(self?.full_name ?? "");
  const file = useRef<HTMLInputElement>(null);
  const saver = useSaver();
  const save = (e: FormEvent) => {
    e.preventDefault();
    void saver.run(t("Name"), () => api.patch("/settings", { full_name: name.trim() }));
  };
  return (
    <section className="settings-section" aria-labelledby="profile-heading">
      <h3 id="profile-heading">{t("Profile")}</h3>
      <div className="settings-avatar">
        <Avatar url={self?.avatar_url ?? null} name={self?.full_name ?? ""} />
        <input
          ref={file}
          type="file"
          accept="image/*"
          className="visually-hidden"
          aria-hidden="true"
          tabIndex={-1}
          onChange={(e) => {
            const f = e.target.files?.[0];
            e.target.value = "";
            if (f) void saver.run(t("Avatar"), () => postFile("/users/me/avatar", f));
          }}
        />
        <button type="button" onClick={() => file.current?.click()}>
          {t("Upload avatar")}
        </button>
        <button type="button" onClick={() => void saver.run(t("Avatar"), () => api.delete("/users/me/avatar"))}>
          {t("Delete avatar")}
        </button>
      </div>
      <form onSubmit={save} className="page-form">
        <label>
          {t("Name")}
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <button type="submit" className="primary">
          {t("Save name")}
        </button>
      </form>
      <div className="page-form">
        <label>
          {t("Who can see my email address")}
          <select
            value={typeof visibility === "number" ? visibility : ""}
            onChange={(e) => void saver.run(t("Who can see my email address"), () => saveSetting("email_address_visibility", Number(e.target.value)))}
          >
            {EMAIL_VISIBILITY.map(([value, label]) => (
              <option key={value} value={value}>
                {label()}
              </option>
            ))}
          </select>
        </label>
      </div>
      {saver.status}
    </section>
  );
}

function Password() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const saver = useSaver();
  const save = async (e: FormEvent) => {
    e.preventDefault();
    if (await saver.run(t("Password"), () => api.patch("/settings", { old_password: current, new_password: next }))) {
      setCurrent("");
      setNext("");
    }
  };
  return (
    <section className="settings-section" aria-labelledby="password-heading">
      <h3 id="password-heading">{t("Password")}</h3>
      <form onSubmit={(e) => void save(e)} className="page-form">
        <label>
          {t("Current password")}
          <input type="password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)} required />
        </label>
        <label>
          {t("New password")}
          <input type="password" autoComplete="new-password" value={next} onChange={(e) => setNext(e.target.value)} required />
        </label>
        <button type="submit" className="primary">
          {t("Change password")}
        </button>
      </form>
      {saver.status}
    </section>
  );
}

const NOTIFICATION_SETTINGS: [string, () => string][] = [
  ["enable_desktop_notifications", () => t("Desktop notifications for mentions and direct messages")],
  ["enable_sounds", () => t("Sounds")],
  ["pm_content_in_desktop_notifications", () => t("Show message content in notifications")],
  ["enable_offline_email_notifications", () => t("Email me about mentions and direct messages when I'm offline")],
  ["enable_offline_push_notifications", () => t("Mobile notifications when I'm offline")],
];

function Notifications() {
  const settings = useSettings((s) => s.settings);
  const saver = useSaver();
  const [permission, setPermission] = useState(notificationsStore.permission());
  return (
    <section className="settings-section" aria-labelledby="notifications-heading">
      <h3 id="notifications-heading">{t("Notifications")}</h3>
      <div className="page-form">
        {NOTIFICATION_SETTINGS.map(([property, label]) => (
          <label key={property} className="checkbox">
            <input
              type="checkbox"
              checked={settings[property] !== false}
              onChange={(e) => void saver.run(label(), () => saveSetting(property, e.target.checked))}
            />
            {label()}
          </label>
        ))}
        {permission === "default" && (
          <button type="button" onClick={() => void notificationsStore.requestPermission().then(setPermission)}>
            {t("Allow notifications in this browser")}
          </button>
        )}
        {permission === "denied" && <p className="muted-text">{t("This browser blocks notifications from this site; allow them in its site settings.")}</p>}
      </div>
      {saver.status}
    </section>
  );
}

export function Settings() {
  const hasFields = useProfileFields((s) => s.fields.length > 0);
  return (
    <section className="page settings" aria-label={t("Personal settings")}>
      <SectionNav
        label={t("Personal settings sections")}
        sections={[
          ["profile", t("Profile")],
          ...(hasFields ? [["profile-fields", t("Profile fields")] as [string, string]] : []),
          ["password", t("Password")],
          ["display-settings", t("Preferences")],
          ["notifications", t("Notifications")],
          ["channel-notifications", t("Channels")],
          ["topic-settings", t("Topics")],
          ["your-bots", t("Your bots")],
        ]}
      />
      <Profile />
      <ProfileFields />
      <Password />
      <Display />
      <Notifications />
      <ChannelNotifications />
      <TopicSettings />
      <Bots own />
      <p>
        <a href="#organization/organization-profile">{t("Custom emoji, user groups and the organization's settings")}</a>
      </p>
    </section>
  );
}
