// Personal settings (#settings/profile): name and avatar, password, time
// zone, theme and notifications. Changes go through PATCH /settings (and the
// avatar endpoints); the page shows what the events then say.
import { useMemo, useRef, useState, type FormEvent, type ReactNode } from "react";
import { api, postFile } from "../api/client.ts";
import { notificationsStore } from "../model/notifications.ts";
import { settingsStore, useSettings } from "../model/settings.ts";
import { COLOR_SCHEME } from "../model/theme.ts";
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
        setMessage({ ok: true, text: `${label}: saved.` });
        return true;
      } catch (e) {
        setMessage({ ok: false, text: e instanceof Error ? e.message : String(e) });
        return false;
      }
    },
  };
}

/** Shows a setting's new value at once; the server's event confirms it, a failure puts the old one back. */
async function saveSetting(property: string, value: unknown): Promise<void> {
  const old = useSettings.getState().settings[property];
  settingsStore.apply(property, value);
  try {
    await api.patch("/settings", { [property]: value });
  } catch (e) {
    settingsStore.apply(property, old);
    throw e;
  }
}

function Profile() {
  const self = useSelf();
  const [name, setName] = useState(self?.full_name ?? "");
  const file = useRef<HTMLInputElement>(null);
  const saver = useSaver();
  const save = (e: FormEvent) => {
    e.preventDefault();
    void saver.run("Name", () => api.patch("/settings", { full_name: name.trim() }));
  };
  return (
    <section className="settings-section" aria-labelledby="profile-heading">
      <h3 id="profile-heading">Profile</h3>
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
            if (f) void saver.run("Avatar", () => postFile("/users/me/avatar", f));
          }}
        />
        <button type="button" onClick={() => file.current?.click()}>
          Upload avatar
        </button>
        <button type="button" onClick={() => void saver.run("Avatar", () => api.delete("/users/me/avatar"))}>
          Delete avatar
        </button>
      </div>
      <form onSubmit={save} className="page-form">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <button type="submit" className="primary">
          Save name
        </button>
      </form>
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
    if (await saver.run("Password", () => api.patch("/settings", { old_password: current, new_password: next }))) {
      setCurrent("");
      setNext("");
    }
  };
  return (
    <section className="settings-section" aria-labelledby="password-heading">
      <h3 id="password-heading">Password</h3>
      <form onSubmit={(e) => void save(e)} className="page-form">
        <label>
          Current password
          <input type="password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)} required />
        </label>
        <label>
          New password
          <input type="password" autoComplete="new-password" value={next} onChange={(e) => setNext(e.target.value)} required />
        </label>
        <button type="submit" className="primary">
          Change password
        </button>
      </form>
      {saver.status}
    </section>
  );
}

function Preferences() {
  const settings = useSettings((s) => s.settings);
  const saver = useSaver();
  const zones = useMemo(() => (typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : ["UTC"]), []);
  const set = (label: string, property: string, value: unknown) => void saver.run(label, () => saveSetting(property, value));
  const scheme = settings.color_scheme ?? COLOR_SCHEME.automatic;
  return (
    <section className="settings-section" aria-labelledby="preferences-heading">
      <h3 id="preferences-heading">Preferences</h3>
      <div className="page-form">
        <label>
          Time zone
          <select value={settings.timezone ?? ""} onChange={(e) => set("Time zone", "timezone", e.target.value)}>
            <option value="">Not set</option>
            {zones.map((z) => (
              <option key={z} value={z}>
                {z}
              </option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>Theme</legend>
          {(
            [
              [COLOR_SCHEME.automatic, "Automatic (follow the system)"],
              [COLOR_SCHEME.light, "Light"],
              [COLOR_SCHEME.dark, "Dark"],
            ] as const
          ).map(([value, label]) => (
            <label key={value} className="checkbox">
              <input type="radio" name="color_scheme" checked={scheme === value} onChange={() => set("Theme", "color_scheme", value)} />
              {label}
            </label>
          ))}
        </fieldset>
      </div>
      {saver.status}
    </section>
  );
}

const NOTIFICATION_SETTINGS: [string, string][] = [
  ["enable_desktop_notifications", "Desktop notifications for mentions and direct messages"],
  ["enable_sounds", "Sounds"],
  ["pm_content_in_desktop_notifications", "Show message content in notifications"],
  ["enable_offline_email_notifications", "Email me about mentions and direct messages when I'm offline"],
  ["enable_offline_push_notifications", "Mobile notifications when I'm offline"],
];

function Notifications() {
  const settings = useSettings((s) => s.settings);
  const saver = useSaver();
  const [permission, setPermission] = useState(notificationsStore.permission());
  return (
    <section className="settings-section" aria-labelledby="notifications-heading">
      <h3 id="notifications-heading">Notifications</h3>
      <div className="page-form">
        {NOTIFICATION_SETTINGS.map(([property, label]) => (
          <label key={property} className="checkbox">
            <input
              type="checkbox"
              checked={settings[property] !== false}
              onChange={(e) => void saver.run(label, () => saveSetting(property, e.target.checked))}
            />
            {label}
          </label>
        ))}
        {permission === "default" && (
          <button type="button" onClick={() => void notificationsStore.requestPermission().then(setPermission)}>
            Allow notifications in this browser
          </button>
        )}
        {permission === "denied" && <p className="muted-text">This browser blocks notifications from this site; allow them in its site settings.</p>}
      </div>
      {saver.status}
    </section>
  );
}

export function Settings() {
  return (
    <section className="page settings" aria-label="Personal settings">
      <Profile />
      <Password />
      <Preferences />
      <Notifications />
    </section>
  );
}
