// Default channels (Zulip's "Default channels" settings): the channels new
// members join; add and remove. Administrators only; the list follows
// default_streams events.
import { useEffect, useState } from "react";
import { api } from "../../api/client.ts";
import { t } from "../../i18n.ts";
import { useAllChannels, allChannelsStore } from "../../model/all-channels.ts";
import { useChannels } from "../../model/channels.ts";
import { useOrganization } from "../../model/organization.ts";
import { AdminTable, Section, useStatus } from "../settings/shared.tsx";

export function DefaultChannels() {
  const ids = useOrganization((s) => s.defaultChannelIds);
  const all = useAllChannels((s) => s.byId);
  const subscriptions = useChannels((s) => s.subscriptions);
  const [adding, setAdding] = useState("");
  const status = useStatus();
  useEffect(() => {
    if (all === null) void allChannelsStore.fetch();
  }, [all]);
  const nameOf = (id: number) => all?.[id]?.name ?? subscriptions[id]?.name ?? t("unknown channel");
  // Zulip: only public channels can be default channels.
  const candidates = Object.values(all ?? {})
    .filter((c) => !c.invite_only && !c.is_archived && !ids.includes(c.stream_id))
    .sort((a, b) => a.name.localeCompare(b.name));
  const current = [...ids].sort((a, b) => nameOf(a).localeCompare(nameOf(b)));
  return (
    <Section id="default-channels" title={t("Default channels")}>
      <p className="muted-text">{t("New members join these channels when they sign up.")}</p>
      <form
        className="page-form"
        onSubmit={(e) => {
          e.preventDefault();
          const id = Number(adding);
          if (id) void status.run(t("#{{channel}} is now a default channel.", { channel: nameOf(id) }), () => api.post("/default_streams", { stream_id: id })).then((ok) => ok && setAdding(""));
        }}
      >
        <label>
          {t("Channel to add")}
          <select value={adding} onChange={(e) => setAdding(e.target.value)} required>
            <option value="">{t("Choose a channel…")}</option>
            {candidates.map((c) => (
              <option key={c.stream_id} value={c.stream_id}>
                #{c.name}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="primary">
          {t("Add default channel")}
        </button>
      </form>
      {status.status}
      {current.length === 0 ? (
        <p className="muted-text">{t("There are no default channels.")}</p>
      ) : (
        <AdminTable label={t("Default channels")}>
          {current.map((id) => (
            <tr key={id}>
              <td>#{nameOf(id)}</td>
              <td>
                <button type="button" onClick={() => void status.run(t("#{{channel}} is no longer a default channel.", { channel: nameOf(id) }), () => api.delete("/default_streams", { stream_id: id }))}>
                  {t("Remove #{{channel}}", { channel: nameOf(id) })}
                </button>
              </td>
            </tr>
          ))}
        </AdminTable>
      )}
    </Section>
  );
}
