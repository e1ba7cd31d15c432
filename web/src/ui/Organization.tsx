// Organization settings (#organization/…), for administrators: the
// organization's name, description and icon, invitations (links and emails),
// the people (role, deactivation), user groups, default channels, custom
// emoji, linkifiers, code playgrounds and bots (each panel in ui/admin/).
// Everyone else sees the panels open to them: custom emoji and user groups
// (their bots are in the personal settings). Loaded on demand (MainView imports this module only when the
// page opens). Each form calls the API; events bring
// the results back into the stores.
import { useCallback, useEffect, useState, type FormEvent } from "react";
import { api } from "../api/client.ts";
import { useChannels } from "../model/channels.ts";
import { useRealm } from "../model/realm.ts";
import { shownEmail, useUsers } from "../model/users.ts";
import { isAdminRole, ROLES, roleLabel, useSelf } from "./people.ts";
import type { User } from "../api/types.ts";
import "../styles/settings-admin.css";
import { t } from "../i18n.ts";
import { canChangeRole, canDeactivateUser, usePermissionInputs } from "../model/permissions.ts";
import { Bots } from "./admin/Bots.tsx";
import { CustomEmoji } from "./admin/CustomEmoji.tsx";
import { DefaultChannels } from "./admin/DefaultChannels.tsx";
import { Linkifiers } from "./admin/Linkifiers.tsx";
import { OrganizationIcon } from "./admin/OrganizationIcon.tsx";
import { Playgrounds } from "./admin/Playgrounds.tsx";
import { UserGroups } from "./admin/UserGroups.tsx";
import { AdminTable, DangerButton, errorText, saved, SectionNav, useConfirm, useStatus } from "./settings/shared.tsx";

function Profile() {
  const realmName = useRealm((s) => s.realmName);
  const [name, setName] = useState(realmName);
  const [description, setDescription] = useState(useRealm.getState().realmDescription ?? "");
  const status = useStatus();
  const save = (e: FormEvent) => {
    e.preventDefault();
    void status.run(t("Organization profile: saved."), () => api.patch("/realm", { name: name.trim(), description }));
  };
  return (
    <section className="settings-section" aria-labelledby="org-profile-heading">
      <h3 id="org-profile-heading">{t("Organization profile")}</h3>
      <form className="page-form" onSubmit={save}>
        <label>
          {t("Organization name")}
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <label>
          {t("Organization description")}
          <textarea value={description} onChange={(e) => setDescription(e.target.value)} rows={3} />
        </label>
        <button type="submit" className="primary">
          {t("Save organization profile")}
        </button>
      </form>
      {status.status}
    </section>
  );
}

/** The organization's plain settings PATCH /realm takes, with what they mean. */
const BOOLEAN_SETTINGS: [string, () => string][] = [
  ["invite_required", () => t("Invitations are required to join")],
  ["emails_restricted_to_domains", () => t("Only allow email addresses of the organization's domains")],
  ["disallow_disposable_email_addresses", () => t("Refuse disposable email addresses")],
  ["require_unique_names", () => t("Require unique names")],
  ["name_changes_disabled", () => t("Prevent people from changing their names")],
  ["email_changes_disabled", () => t("Prevent people from changing their email addresses")],
  ["avatar_changes_disabled", () => t("Prevent people from changing their avatars")],
  ["allow_message_editing", () => t("Allow editing messages")],
  ["inline_image_preview", () => t("Show previews of uploaded and linked images")],
  ["inline_url_embed_preview", () => t("Show previews of linked websites")],
  ["send_welcome_emails", () => t("Send a welcome email to new members")],
  ["digest_emails_enabled", () => t("Send weekly digest emails to inactive people")],
  ["message_content_allowed_in_email_notifications", () => t("Allow message content in email notifications")],
  ["enable_spectator_access", () => t("Allow anyone on the web to view web-public channels")],
  ["enable_read_receipts", () => t("Enable read receipts")],
  ["enable_guest_user_indicator", () => t("Mark guests as guests beside their names")],
  ["enable_guest_user_dm_warning", () => t("Warn when a direct message includes a guest")],
];

const TIME_LIMITS: [string, () => string][] = [
  ["message_content_edit_limit_seconds", () => t("Time limit for editing messages (seconds; empty: no limit)")],
  ["message_content_delete_limit_seconds", () => t("Time limit for deleting messages (seconds; empty: no limit)")],
  ["move_messages_within_stream_limit_seconds", () => t("Time limit for moving messages between topics (seconds; empty: no limit)")],
  ["move_messages_between_streams_limit_seconds", () => t("Time limit for moving messages between channels (seconds; empty: no limit)")],
];

function Policies() {
  const settings = useRealm((s) => s.settings);
  const status = useStatus();
  const save = (label: string, params: Record<string, unknown>) => status.run(saved(label), () => api.patch("/realm", params));
  return (
    <section className="settings-section" aria-labelledby="org-settings-heading">
      <h3 id="org-settings-heading">{t("Organization settings")}</h3>
      <div className="page-form">
        {BOOLEAN_SETTINGS.filter(([name]) => name in settings).map(([name, label]) => (
          <label key={name} className="checkbox">
            <input type="checkbox" checked={settings[name] === true} onChange={(e) => void save(label(), { [name]: e.target.checked })} />
            {label()}
          </label>
        ))}
        <label>
          {t("Message edit history visible to everyone")}
          <select
            value={String(settings.message_edit_history_visibility_policy ?? "all")}
            onChange={(e) => void save(t("Edit history"), { message_edit_history_visibility_policy: e.target.value })}
          >
            <option value="all">{t("All edits and moves")}</option>
            <option value="moves">{t("Moves only")}</option>
            <option value="none">{t("None")}</option>
          </select>
        </label>
        <label>
          {t("Topics")}
          <select value={String(settings.topics_policy ?? "allow_empty_topic")} onChange={(e) => void save(t("Topics"), { topics_policy: e.target.value })}>
            <option value="allow_empty_topic">{t("Messages may go to the general chat (no topic)")}</option>
            <option value="disable_empty_topic">{t("Every message needs a topic")}</option>
          </select>
        </label>
        {TIME_LIMITS.filter(([name]) => name in settings).map(([name, label]) => (
          <TimeLimit key={name} label={label()} value={settings[name] as number | null} onSave={(value) => void save(label(), { [name]: value })} />
        ))}
        <TimeLimit
          label={t("Days before new members may do what full members do (waiting period)")}
          value={(settings.waiting_period_threshold as number | undefined) ?? 0}
          onSave={(value) => void save(t("Waiting period"), { waiting_period_threshold: value === "unlimited" ? 0 : value })}
        />
      </div>
      {status.status}
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
  const status = useStatus();
  const { set: setStatus } = status;
  const load = useCallback(async () => {
    try {
      setInvites((await api.get<{ invites: Invite[] }>("/invites")).invites);
    } catch (err) {
      setStatus({ ok: false, text: errorText(err) });
    }
  }, [setStatus]);
  useEffect(() => {
    void load();
  }, [load]);
  const act = async (what: string, action: () => Promise<unknown>) => {
    if (await status.run(what, action)) await load();
  };
  const createLink = () =>
    act(t("Invitation link created."), async () => {
      const reply = await api.post<{ invite_link: string }>("/invites/multiuse", { invite_as: inviteAs, stream_ids: channelIds, invite_expires_in_minutes: 7 * 24 * 60 });
      setLink(reply.invite_link);
    });
  const sendEmails = (e: FormEvent) => {
    e.preventDefault();
    void act(t("Invitations sent."), async () => {
      await api.post("/invites", { invitee_emails: emails, invite_as: inviteAs, stream_ids: channelIds, invite_expires_in_minutes: 7 * 24 * 60 });
      setEmails("");
    });
  };
  return (
    <section className="settings-section" aria-labelledby="invites-heading">
      <h3 id="invites-heading">{t("Invitations")}</h3>
      <div className="page-form">
        <label>
          {t("Invite as")}
          <select value={inviteAs} onChange={(e) => setInviteAs(Number(e.target.value))}>
            {ROLES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>{t("Channels to join")}</legend>
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
          {t("Create invitation link")}
        </button>
        {link && (
          <label>
            {t("Invitation link")}
            <input readOnly value={link} onFocus={(e) => e.target.select()} />
          </label>
        )}
      </div>
      <form className="page-form" onSubmit={sendEmails}>
        <label>
          {t("Emails to invite (separated by commas or new lines)")}
          <textarea value={emails} onChange={(e) => setEmails(e.target.value)} rows={2} required />
        </label>
        <button type="submit" className="primary">
          {t("Send invitations")}
        </button>
      </form>
      {status.status}
      {invites.length > 0 && (
        <AdminTable label={t("Pending invitations")} columns={[t("Invitation"), t("Role"), t("Expires")]} actions>
          {invites.map((inv) => (
            <tr key={`${inv.is_multiuse}-${inv.id}`}>
              <td>{inv.is_multiuse ? (inv.link_url ?? t("Invitation link")) : inv.email}</td>
              <td>{roleLabel(inv.invited_as)}</td>
              <td>{inv.expiry_date ? new Date(inv.expiry_date * 1000).toLocaleDateString() : t("Never")}</td>
              <td>
                <button type="button" onClick={() => void act(t("Invitation revoked."), () => api.delete(inv.is_multiuse ? `/invites/multiuse/${inv.id}` : `/invites/${inv.id}`))}>
                  {t("Revoke")}
                </button>
              </td>
            </tr>
          ))}
        </AdminTable>
      )}
    </section>
  );
}

function Users() {
  usePermissionInputs();
  const byId = useUsers((s) => s.byId);
  const self = useSelf();
  const status = useStatus();
  const confirm = useConfirm();
  const people = Object.values(byId)
    .filter((u) => !u.is_bot)
    .sort((a, b) => Number(b.is_active !== false) - Number(a.is_active !== false) || a.full_name.localeCompare(b.full_name));
  const changeRole = (u: User, role: number) =>
    confirm.ask({
      title: t("Change role of {{name}}?", { name: u.full_name }),
      text: t("{{name}} becomes {{role}} (now {{current}}).", { name: u.full_name, role: roleLabel(role), current: roleLabel(u.role) }),
      action: t("Change role"),
      run: () => api.patch(`/users/${u.user_id}`, { role }),
    });
  return (
    <section className="settings-section" aria-labelledby="users-heading">
      <h3 id="users-heading">{t("Users")}</h3>
      {status.status}
      <AdminTable label={t("Users")} columns={[t("Name"), t("Email"), t("Role")]} actions>
        {people.map((u) => (
          <tr key={u.user_id} className={u.is_active === false ? "deactivated" : undefined}>
            <td>{u.full_name}</td>
            <td>{shownEmail(u)}</td>
            <td>
              <select
                aria-label={t("Role of {{name}}", { name: u.full_name })}
                value={u.role}
                disabled={u.user_id === self?.user_id || u.is_active === false || !canChangeRole(u.role, u.role)}
                onChange={(e) => changeRole(u, Number(e.target.value))}
              >
                {ROLES.filter((r) => r.value === u.role || canChangeRole(u.role, r.value)).map((r) => (
                  <option key={r.value} value={r.value}>
                    {r.label}
                  </option>
                ))}
              </select>
            </td>
            <td>
              {u.user_id !== self?.user_id &&
                canDeactivateUser(u.role) &&
                (u.is_active === false ? (
                  <button type="button" onClick={() => void status.run(t("{{name}} reactivated.", { name: u.full_name }), () => api.post(`/users/${u.user_id}/reactivate`))}>
                    {t("Reactivate {{name}}", { name: u.full_name })}
                  </button>
                ) : (
                  <DangerButton
                    confirm={confirm}
                    title={t("Deactivate {{name}}?", { name: u.full_name })}
                    text={t("{{name}} is signed out everywhere and can no longer sign in; their bots are deactivated too.", { name: u.full_name })}
                    action={t("Deactivate")}
                    run={() => api.delete(`/users/${u.user_id}`)}
                  >
                    {t("Deactivate {{name}}", { name: u.full_name })}
                  </DangerButton>
                ))}
            </td>
          </tr>
        ))}
      </AdminTable>
      {confirm.dialog}
    </section>
  );
}

export function Organization() {
  const self = useSelf();
  if (!isAdminRole(self?.role)) {
    return (
      <section className="page settings" aria-label={t("Organization settings")}>
        <p>{t("Only the organization's administrators can change its settings.")}</p>
        <CustomEmoji />
        <UserGroups />
      </section>
    );
  }
  return (
    <section className="page settings" aria-label={t("Organization settings")}>
      <SectionNav
        label={t("Organization settings sections")}
        sections={[
          ["org-profile", t("Organization profile")],
          ["organization-icon", t("Organization icon")],
          ["org-settings", t("Organization settings")],
          ["invites", t("Invitations")],
          ["users", t("Users")],
          ["user-groups", t("User groups")],
          ["default-channels", t("Default channels")],
          ["custom-emoji", t("Custom emoji")],
          ["linkifiers", t("Linkifiers")],
          ["playgrounds", t("Code playgrounds")],
          ["bots", t("Bots")],
        ]}
      />
      <Profile />
      <Policies />
      <OrganizationIcon />
      <Invitations />
      <Users />
      <UserGroups />
      <DefaultChannels />
      <CustomEmoji />
      <Linkifiers />
      <Playgrounds />
      <Bots />
    </section>
  );
}
