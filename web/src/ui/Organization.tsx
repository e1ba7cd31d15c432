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
      {status && (
        <p className={status.ok ? "form-ok" : "form-error"} role={status.ok ? "status" : "alert"}>
          {status.text}
        </p>
      )}
    </section>
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
      {status && (
        <p className={status.ok ? "form-ok" : "form-error"} role={status.ok ? "status" : "alert"}>
          {status.text}
        </p>
      )}
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
      <Invitations />
      <Users />
    </section>
  );
}
