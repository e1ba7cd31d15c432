// The channel browser (#channels/all): every channel you can see, with
// subscribe/unsubscribe, a form to create one, and, for administrators, the
// name and description of each.
import { useEffect, useMemo, useState, type FormEvent } from "react";
import { api } from "../api/client.ts";
import { useAllChannels, allChannelsStore, type Channel } from "../model/all-channels.ts";
import { useChannels } from "../model/channels.ts";
import { hrefFor } from "../model/navigation.ts";
import { useUsers } from "../model/users.ts";
import { prepareHtml } from "./rendered.ts";
import { isAdminRole, useSelf } from "./people.ts";
import { t } from "../i18n.ts";
import { ErrorLine } from "./StatusLine.tsx";

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The server's rendered description (Markdown as HTML, sanitized there, prepared like message content); the raw text only if none came. */
function ChannelDescription({ channel }: { channel: Channel }) {
  const selfId = useUsers((s) => s.selfId);
  const rendered = channel.rendered_description;
  const html = useMemo(() => (rendered ? prepareHtml(rendered, selfId, false) : null), [rendered, selfId]);
  if (html) return <div className="channel-browser-description rendered_markdown" dangerouslySetInnerHTML={{ __html: html }} />;
  return <p className="channel-browser-description">{channel.description || <em>{t("No description.")}</em>}</p>;
}

function ChannelRow({ channel, subscribed, admin, onError }: { channel: Channel; subscribed: boolean; admin: boolean; onError: (msg: string | null) => void }) {
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(channel.name);
  const [description, setDescription] = useState(channel.description);
  const [busy, setBusy] = useState(false);
  const run = async (action: () => Promise<unknown>) => {
    setBusy(true);
    onError(null);
    try {
      await action();
    } catch (e) {
      onError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const save = (e: FormEvent) => {
    e.preventDefault();
    const params: Record<string, unknown> = {};
    if (name.trim() !== channel.name) params.new_name = name.trim();
    if (description !== channel.description) params.description = description;
    void run(async () => {
      if (Object.keys(params).length > 0) await api.patch(`/streams/${channel.stream_id}`, params);
      setEditing(false);
    });
  };
  return (
    <li className="channel-browser-row" aria-label={channel.name}>
      <div className="channel-browser-main">
        <a href={hrefFor({ kind: "messages", narrow: { kind: "channel", streamId: channel.stream_id } })} className="channel-browser-name">
          {channel.invite_only ? "🔒 " : "# "}
          {channel.name}
        </a>
        {channel.subscriber_count !== undefined && <span className="muted-text">{t("{{count}} subscribers", { count: channel.subscriber_count, defaultValue_one: "{{count}} subscriber" })}</span>}
        <ChannelDescription channel={channel} />
      </div>
      <div className="channel-browser-actions">
        {subscribed ? (
          <button type="button" disabled={busy} onClick={() => void run(() => api.delete("/users/me/subscriptions", { subscriptions: [channel.name] }))}>
            {t("Unsubscribe")}
          </button>
        ) : (
          <button type="button" className="primary" disabled={busy} onClick={() => void run(() => api.post("/users/me/subscriptions", { subscriptions: [{ name: channel.name }] }))}>
            {t("Subscribe")}
          </button>
        )}
        {admin && (
          <button type="button" aria-expanded={editing} onClick={() => setEditing(!editing)}>
            {t("Edit")}
          </button>
        )}
      </div>
      {editing && (
        <form className="channel-edit" onSubmit={save} aria-label={t("Settings of {{channel}}", { channel: channel.name })}>
          <label>
            {t("Channel name")}
            <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <label>
            {t("Description")}
            <input value={description} onChange={(e) => setDescription(e.target.value)} />
          </label>
          <button type="submit" className="primary" disabled={busy}>
            {t("Save")}
          </button>
        </form>
      )}
    </li>
  );
}

export function ChannelBrowser() {
  const { byId, error } = useAllChannels();
  const subscriptions = useChannels((s) => s.subscriptions);
  const self = useSelf();
  const [filter, setFilter] = useState("");
  const [actionError, setActionError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [newName, setNewName] = useState("");
  const [newDescription, setNewDescription] = useState("");
  const [isPrivate, setPrivate] = useState(false);

  useEffect(() => {
    if (byId === null) void allChannelsStore.fetch();
  }, [byId]);

  const channels = useMemo(() => {
    const q = filter.trim().toLowerCase();
    return Object.values(byId ?? {})
      .filter((c) => !c.is_archived && (q === "" || c.name.toLowerCase().includes(q)))
      .sort((a, b) => a.name.localeCompare(b.name));
  }, [byId, filter]);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setActionError(null);
    try {
      await api.post("/users/me/subscriptions", { subscriptions: [{ name: newName.trim(), description: newDescription }], invite_only: isPrivate });
      setNewName("");
      setNewDescription("");
      setPrivate(false);
      setCreating(false);
      void allChannelsStore.fetch();
    } catch (err) {
      setActionError(errorText(err));
    }
  };

  return (
    <section className="page channel-browser" aria-label={t("Channels")}>
      <div className="page-toolbar">
        <label className="visually-hidden" htmlFor="channel-filter">
          {t("Filter channels")}
        </label>
        <input id="channel-filter" placeholder={t("Filter channels")} value={filter} onChange={(e) => setFilter(e.target.value)} />
        <button type="button" className="primary" aria-expanded={creating} onClick={() => setCreating(!creating)}>
          {t("Create channel")}
        </button>
      </div>
      {creating && (
        <form className="page-form" onSubmit={(e) => void create(e)} aria-label={t("New channel")}>
          <label>
            {t("Channel name")}
            <input value={newName} onChange={(e) => setNewName(e.target.value)} required maxLength={60} />
          </label>
          <label>
            {t("Description")}
            <input value={newDescription} onChange={(e) => setNewDescription(e.target.value)} />
          </label>
          <label className="checkbox">
            <input type="checkbox" checked={isPrivate} onChange={(e) => setPrivate(e.target.checked)} />
            {t("Private (invited people only)")}
          </label>
          <button type="submit" className="primary">
            {t("Create")}
          </button>
        </form>
      )}
      <ErrorLine error={actionError ?? error} />
      {byId === null && !error ? (
        <p aria-busy="true">{t("Loading…")}</p>
      ) : (
        <ul className="channel-browser-list">
          {channels.map((c) => (
            <ChannelRow key={c.stream_id} channel={c} subscribed={subscriptions[c.stream_id] !== undefined} admin={isAdminRole(self?.role)} onError={setActionError} />
          ))}
        </ul>
      )}
    </section>
  );
}
