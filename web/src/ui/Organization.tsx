// Organization settings (#organization/…), for administrators: the
// organization's name and description, invitations (links and emails), and
// the people (role, deactivation). Each form calls the API; events bring
// the results back into the stores.
import { useCallback, useEffect, useState, type FormEvent } from "react";
import { api } from "../api/client.ts";
import { useChannels } from "../model/channels.ts";
import { useRealm } from "../model/realm.ts";
import { useUsers } from "../model/users.ts";
import { isAdminRole, ROLES, roleLabel, useSelf } from "./people.ts";
import { StatusLine } from "./StatusLine.tsx";

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function Profile() {
  const realmName = useRealm((s) => s.realmName);
  const [name, setName] = useState(realmName);
  const [description, setDescription] = useState(useRealm.getState().realmDescription ?? "");
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    try {
      await api.patch("/realm", { name: name.trim(), description });
      setStatus({ ok: true, text: "Organization profile: saved." });
    } catch (err) {
      setStatus({ ok: false, text: message(err) });
    }
  };
  return (
    <section className="settings-section" aria-labelledby="org-profile-heading">
      <h3 id="org-profile-heading">Organization profile</h3>
      <form className="page-form" onSubmit={(e) => void save(e)}>
        <label>
          Organization name
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <label>
          Organization description
          <textarea value={description} onChange={(e) => setDescription(e.target.value)} rows={3} />
        </label>
        <button type="submit" className="primary">
          Save organization profile
        </button>
      </form>
      <StatusLine status={status} />
    </section>
  );
}

/** The organization's plain settings PATCH /realm takes, with what they mean. */
const BOOLEAN_SETTINGS: [string, string][] = [
  ["invite_required", "Invitations are required to join"],
  ["emails_restricted_to_domains", "Only allow email addresses of the organization's domains"],
  ["disallow_disposable_email_addresses", "Refuse disposable email addresses"],
  ["require_unique_names", "Require unique names"],
  ["name_changes_disabled", "Prevent people from changing their names"],
  ["email_changes_disabled", "Prevent people from changing their email addresses"],
  ["avatar_changes_disabled", "Prevent people from changing their avatars"],
  ["allow_message_editing", "Allow editing messages"],
  ["inline_image_preview", "Show previews of uploaded and linked images"],
  ["inline_url_embed_preview", "Show previews of linked websites"],
  ["send_welcome_emails", "Send a welcome email to new members"],
  ["digest_emails_enabled", "Send weekly digest emails to inactive people"],
  ["message_content_allowed_in_email_notifications", "Allow message content in email notifications"],
  ["enable_spectator_access", "Allow anyone on the web to view web-public channels"],
  ["enable_read_receipts", "Enable read receipts"],
  ["enable_guest_user_indicator", "Mark guests as guests beside their names"],
  ["enable_guest_user_dm_warning", "Warn when a direct message includes a guest"],
];

const TIME_LIMITS: [string, string][] = [
  ["message_content_edit_limit_seconds", "Time limit for editing messages (seconds; empty: no limit)"],
  ["message_content_delete_limit_seconds", "Time limit for deleting messages (seconds; empty: no limit)"],
  ["move_messages_within_stream_limit_seconds", "Time limit for moving messages between topics (seconds; empty: no limit)"],
  ["move_messages_between_streams_limit_seconds", "Time limit for moving messages between channels (seconds; empty: no limit)"],
];

function Policies() {
  const settings = useRealm((s) => s.settings);
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const save = async (label: string, params: Record<string, unknown>) => {
    try {
      await api.patch("/realm", params);
      setStatus({ ok: true, text: `${label}: saved.` });
    } catch (err) {
      setStatus({ ok: false, text: message(err) });
    }
  };
  return (
    <section className="settings-section" aria-labelledby="org-settings-heading">
      <h3 id="org-settings-heading">Organization settings</h3>
      <div className="page-form">
        {BOOLEAN_SETTINGS.filter(([name]) => name in settings).map(([name, label]) => (
          <label key={name} className="checkbox">
            <input type="checkbox" checked={settings[name] === true} onChange={(e) => void save(label, { [name]: e.target.checked })} />
            {label}
          </label>
        ))}
        <label>
          Message edit history visible to everyone
          <select
            value={String(settings.message_edit_history_visibility_policy ?? "all")}
            onChange={(e) => void save("Edit history", { message_edit_history_visibility_policy: e.target.value })}
          >
            <option value="all">All edits and moves</option>
            <option value="moves">Moves only</option>
            <option value="none">None</option>
          </select>
        </label>
        <label>
          Topics
          <select value={String(settings.topics_policy ?? "allow_empty_topic")} onChange={(e) => void save("Topics", { topics_policy: e.target.value })}>
            <option value="allow_empty_topic">Messages may go to the general chat (no topic)</option>
            <option value="disable_empty_topic">Every message needs a topic</option>
          </select>
        </label>
        {TIME_LIMITS.filter(([name]) => name in settings).map(([name, label]) => (
          <TimeLimit key={name} label={label} value={settings[name] as number | null} onSave={(value) => void save(label, { [name]: value })} />
        ))}
        <TimeLimit
          label="Days before new members may do what full members do (waiting period)"
          value={(settings.waiting_period_threshold as number | undefined) ?? 0}
          onSave={(value) => void save("Waiting period", { waiting_period_threshold: value === "unlimited" ? 0 : value })}
        />
      </div>
      <StatusLine status={status} />
    </section>
  );
}

/** A number field saved when it loses focus; empty means "unlimited" (Zulip's value for no limit). */
function TimeLimit({ label, value, onSave }: { label: string; value: number | null; onSave: (value: number | "unlimited") => void }) {
  const [text, setText] = useState(value === null || value === undefined ? "" : String(value));
  return (
    <label>
      {label}
      <input
        inputMode="numeric"
        value={text}
        onChange={(e) => setText(e.target.value)}
        onBlur={() => {
          const trimmed = text.trim();
          if (trimmed === (value === null || value === undefined ? "" : String(value))) return;
          onSave(trimmed === "" ? "unlimited" : Number(trimmed));
        }}
      />
    </label>
  );
}

interface Invite {
  id: number;
  email?: string;
  is_multiuse: boolean;
  invited_as: number;
  link_url?: string;
  expiry_date: number | null;
}

function Invitations() {
  const subscriptions = useChannels((s) => s.subscriptions);
  const [inviteAs, setInviteAs] = useState(400);
  const [emails, setEmails] = useState("");
  const [channelIds, setChannelIds] = useState<number[]>([]);
  const [link, setLink] = useState<string | null>(null);
  const [invites, setInvites] = useState<Invite[]>([]);
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const load = useCallback(async () => {
    try {
      setInvites((await api.get<{ invites: Invite[] }>("/invites")).invites);
    } catch (err) {
      setStatus({ ok: false, text: message(err) });
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);
  const act = async (what: string, action: () => Promise<unknown>) => {
    try {
      await action();
      setStatus({ ok: true, text: what });
      await load();
    } catch (err) {
      setStatus({ ok: false, text: message(err) });
    }
  };
  const createLink = () =>
    act("Invitation link created.", async () => {
      const reply = await api.post<{ invite_link: string }>("/invites/multiuse", { invite_as: inviteAs, stream_ids: channelIds, invite_expires_in_minutes: 7 * 24 * 60 });
      setLink(reply.invite_link);
    });
  const sendEmails = (e: FormEvent) => {
    e.preventDefault();
    void act("Invitations sent.", async () => {
      await api.post("/invites", { invitee_emails: emails, invite_as: inviteAs, stream_ids: channelIds, invite_expires_in_minutes: 7 * 24 * 60 });
      setEmails("");
    });
  };
  return (
    <section className="settings-section" aria-labelledby="invites-heading">
      <h3 id="invites-heading">Invitations</h3>
      <div className="page-form">
        <label>
          Invite as
          <select value={inviteAs} onChange={(e) => setInviteAs(Number(e.target.value))}>
            {ROLES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>Channels to join</legend>
          {Object.values(subscriptions)
            .sort((a, b) => a.name.localeCompare(b.name))
            .map((s) => (
              <label key={s.stream_id} className="checkbox">
                <input
                  type="checkbox"
                  checked={channelIds.includes(s.stream_id)}
                  onChange={(e) => setChannelIds((ids) => (e.target.checked ? [...ids, s.stream_id] : ids.filter((id) => id !== s.stream_id)))}
                />
                {s.name}
              </label>
            ))}
        </fieldset>
        <button type="button" className="primary" onClick={() => void createLink()}>
          Create invitation link
        </button>
        {link && (
          <label>
            Invitation link
            <input readOnly value={link} onFocus={(e) => e.target.select()} />
          </label>
        )}
      </div>
      <form className="page-form" onSubmit={sendEmails}>
        <label>
          Emails to invite (separated by commas or new lines)
          <textarea value={emails} onChange={(e) => setEmails(e.target.value)} rows={2} required />
        </label>
        <button type="submit" className="primary">
          Send invitations
        </button>
      </form>
      <StatusLine status={status} />
      {invites.length > 0 && (
        <table className="admin-table" aria-label="Pending invitations">
          <thead>
            <tr>
              <th>Invitation</th>
              <th>Role</th>
              <th>Expires</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {invites.map((inv) => (
              <tr key={`${inv.is_multiuse}-${inv.id}`}>
                <td>{inv.is_multiuse ? (inv.link_url ?? "Invitation link") : inv.email}</td>
                <td>{roleLabel(inv.invited_as)}</td>
                <td>{inv.expiry_date ? new Date(inv.expiry_date * 1000).toLocaleDateString() : "Never"}</td>
                <td>
                  <button type="button" onClick={() => void act("Invitation revoked.", () => api.delete(inv.is_multiuse ? `/invites/multiuse/${inv.id}` : `/invites/${inv.id}`))}>
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Users() {
  const byId = useUsers((s) => s.byId);
  const self = useSelf();
  const [status, setStatus] = useState<string | null>(null);
  const act = async (action: () => Promise<unknown>) => {
    setStatus(null);
    try {
      await action();
    } catch (err) {
      setStatus(message(err));
    }
  };
  const people = Object.values(byId)
    .filter((u) => !u.is_bot)
    .sort((a, b) => Number(b.is_active !== false) - Number(a.is_active !== false) || a.full_name.localeCompare(b.full_name));
  return (
    <section className="settings-section" aria-labelledby="users-heading">
      <h3 id="users-heading">Users</h3>
      {status && (
        <p className="form-error" role="alert">
          {status}
        </p>
      )}
      <table className="admin-table" aria-label="Users">
        <thead>
          <tr>
            <th>Name</th>
            <th>Email</th>
            <th>Role</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {people.map((u) => (
            <tr key={u.user_id} className={u.is_active === false ? "deactivated" : undefined}>
              <td>{u.full_name}</td>
              <td>{u.email}</td>
              <td>
                <select
                  aria-label={`Role of ${u.full_name}`}
                  value={u.role}
                  disabled={u.user_id === self?.user_id || u.is_active === false}
                  onChange={(e) => void act(() => api.patch(`/users/${u.user_id}`, { role: Number(e.target.value) }))}
                >
                  {ROLES.map((r) => (
                    <option key={r.value} value={r.value}>
                      {r.label}
                    </option>
                  ))}
                </select>
              </td>
              <td>
                {u.user_id !== self?.user_id &&
                  (u.is_active === false ? (
                    <button type="button" onClick={() => void act(() => api.post(`/users/${u.user_id}/reactivate`))}>
                      Reactivate {u.full_name}
                    </button>
                  ) : (
                    <button type="button" onClick={() => window.confirm(`Deactivate ${u.full_name}?`) && void act(() => api.delete(`/users/${u.user_id}`))}>
                      Deactivate {u.full_name}
                    </button>
                  ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function Organization() {
  const self = useSelf();
  if (!isAdminRole(self?.role)) {
    return (
      <section className="page" aria-label="Organization settings">
        <p>Only the organization's administrators can change its settings.</p>
      </section>
    );
  }
  return (
    <section className="page settings" aria-label="Organization settings">
      <Profile />
      <Policies />
      <Invitations />
      <Users />
    </section>
  );
}
