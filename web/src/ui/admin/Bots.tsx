// Bots (Zulip's "Bots" settings): every bot of the organization for
// administrators (realm_bots), your own otherwise; create a bot (the kinds
// can_create_bots_group / can_create_write_only_bots_group allow), see and
// regenerate your bots' API keys, deactivate and reactivate. The list
// follows realm_bot events.
import { useState, type FormEvent } from "react";
import { api } from "../../api/client.ts";
import { t } from "../../i18n.ts";
import { useOrganization } from "../../model/organization.ts";
import { botTypesAllowed, isAdmin, usePermissionInputs } from "../../model/permissions.ts";
import { userName, useUsers } from "../../model/users.ts";
import { AdminTable, DangerButton, Section, useConfirm, useStatus } from "../settings/shared.tsx";

const BOT_TYPES: Record<number, () => string> = {
  1: () => t("Generic bot"),
  2: () => t("Incoming webhook"),
  3: () => t("Outgoing webhook"),
  4: () => t("Embedded bot"),
};

function CreateBot({ types, run }: { types: number[]; run: (done: string, action: () => Promise<unknown>) => Promise<boolean> }) {
  const [name, setName] = useState("");
  const [shortName, setShortName] = useState("");
  const [type, setType] = useState(types[0]!);
  const [payloadUrl, setPayloadUrl] = useState("");
  const create = async (e: FormEvent) => {
    e.preventDefault();
    const params: Record<string, unknown> = { full_name: name.trim(), short_name: shortName.trim(), bot_type: type };
    if (type === 3) params.payload_url = payloadUrl.trim();
    if (await run(t("Bot {{name}} created.", { name: name.trim() }), () => api.post("/bots", params))) {
      setName("");
      setShortName("");
      setPayloadUrl("");
    }
  };
  return (
    <form className="page-form" onSubmit={(e) => void create(e)}>
      <label>
        {t("Bot type")}
        <select value={type} onChange={(e) => setType(Number(e.target.value))}>
          {types.map((ty) => (
            <option key={ty} value={ty}>
              {BOT_TYPES[ty]!()}
            </option>
          ))}
        </select>
      </label>
      <label>
        {t("Bot name")}
        <input value={name} onChange={(e) => setName(e.target.value)} required />
      </label>
      <label>
        {t("Bot email (the part before -bot@)")}
        <input value={shortName} onChange={(e) => setShortName(e.target.value.replace(/[^a-zA-Z0-9_.-]/g, ""))} required />
      </label>
      {type === 3 && (
        <label>
          {t("Endpoint URL")}
          <input type="url" value={payloadUrl} onChange={(e) => setPayloadUrl(e.target.value)} required />
        </label>
      )}
      <button type="submit" className="primary">
        {t("Create bot")}
      </button>
    </form>
  );
}

/** `own`: only your bots (personal settings); otherwise every bot you may see (the organization page). */
export function Bots({ own = false }: { own?: boolean }) {
  usePermissionInputs();
  const bots = useOrganization((s) => s.bots);
  const selfId = useUsers((s) => s.selfId);
  useUsers((s) => s.byId);
  const status = useStatus();
  const confirm = useConfirm();
  const types = botTypesAllowed();
  const admin = isAdmin();
  const list = Object.values(bots)
    .filter((b) => !own || b.owner_id === selfId)
    .sort((a, b) => Number(b.is_active) - Number(a.is_active) || a.full_name.localeCompare(b.full_name));
  return (
    <Section id={own ? "your-bots" : "bots"} title={own ? t("Your bots") : t("Bots")}>
      {types.length > 0 ? <CreateBot types={types} run={status.run} /> : <p className="muted-text">{t("You may not create bots in this organization.")}</p>}
      {status.status}
      {list.length === 0 ? (
        <p className="muted-text">{t("There are no bots yet.")}</p>
      ) : (
        <AdminTable label={own ? t("Your bots") : t("Bots")} columns={[t("Name"), t("Type"), t("Owner"), t("API key")]} actions>
          {list.map((b) => {
            const mine = b.owner_id === selfId;
            return (
              <tr key={b.user_id} className={b.is_active ? undefined : "deactivated"}>
                <td>
                  {b.full_name}
                  <div className="muted-text">{b.email}</div>
                </td>
                <td>{BOT_TYPES[b.bot_type]?.() ?? ""}</td>
                <td>{b.owner_id ? userName(b.owner_id) : t("No owner")}</td>
                <td>{mine && b.api_key ? <input readOnly className="api-key" aria-label={t("API key of {{name}}", { name: b.full_name })} value={b.api_key} onFocus={(e) => e.target.select()} /> : null}</td>
                <td className="row-actions">
                  {mine && b.is_active && (
                    <DangerButton
                      confirm={confirm}
                      title={t("Generate a new API key for {{name}}?", { name: b.full_name })}
                      text={t("Whatever uses the current key stops working until it is given the new one.")}
                      action={t("Generate new key")}
                      run={() => api.post(`/bots/${b.user_id}/api_key/regenerate`)}
                    >
                      {t("Regenerate API key of {{name}}", { name: b.full_name })}
                    </DangerButton>
                  )}
                  {(mine || admin) &&
                    (b.is_active ? (
                      <DangerButton
                        confirm={confirm}
                        title={t("Deactivate {{name}}?", { name: b.full_name })}
                        text={t("The bot can no longer send messages or use the API until it is reactivated.")}
                        action={t("Deactivate")}
                        run={() => api.delete(`/bots/${b.user_id}`)}
                      >
                        {t("Deactivate {{name}}", { name: b.full_name })}
                      </DangerButton>
                    ) : (
                      <button type="button" onClick={() => void status.run(t("{{name}} reactivated.", { name: b.full_name }), () => api.post(`/users/${b.user_id}/reactivate`))}>
                        {t("Reactivate {{name}}", { name: b.full_name })}
                      </button>
                    ))}
                </td>
              </tr>
            );
          })}
        </AdminTable>
      )}
      {confirm.dialog}
    </Section>
  );
}
