// x: a new direct message. Choose one or more people (filtered by name or
// email), then the conversation opens with the compose box focused.
import { useMemo, useState, type FormEvent } from "react";
import { requestCompose } from "../model/compose-requests.ts";
import { messageUi } from "../model/message-ui.ts";
import { navigate } from "../model/navigation.ts";
import { dmNarrow, narrowKey } from "../model/narrow.ts";
import { usePermissions } from "../model/permissions.ts";
import { shownEmail, useUsers } from "../model/users.ts";
import { Dialog, DialogFooter } from "./Dialog.tsx";
import { t } from "../i18n.ts";

export function NewDmDialog() {
  const { byId, selfId } = useUsers();
  const deactivated = usePermissions((s) => s.deactivated);
  const [filter, setFilter] = useState("");
  const [chosen, setChosen] = useState<number[]>([]);
  const people = useMemo(() => {
    const f = filter.trim().toLowerCase();
    return Object.values(byId)
      .filter((u) => !deactivated[u.user_id] && u.is_active !== false && u.user_id !== selfId && (f === "" || u.full_name.toLowerCase().includes(f) || shownEmail(u).toLowerCase().includes(f)))
      .sort((a, b) => a.full_name.localeCompare(b.full_name))
      .slice(0, 50);
  }, [byId, selfId, filter, deactivated]);
  const toggle = (id: number) => setChosen((c) => (c.includes(id) ? c.filter((x) => x !== id) : [...c, id]));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const ids = chosen.length > 0 ? chosen : people.length === 1 ? [people[0]!.user_id] : [];
    if (ids.length === 0) return;
    const narrow = dmNarrow(ids, selfId);
    messageUi.closeDialog();
    navigate({ kind: "messages", narrow });
    requestCompose({ key: narrowKey(narrow), focus: "message" });
  };
  return (
    <Dialog title={t("New direct message")} onClose={() => messageUi.closeDialog()} className="new-dm-dialog">
      <form onSubmit={submit} className="dialog-form">
        <label htmlFor="new-dm-filter">{t("Find people")}</label>
        <input id="new-dm-filter" value={filter} onChange={(e) => setFilter(e.target.value)} placeholder={t("Name or email")} autoComplete="off" autoFocus />
        <fieldset className="people-choice">
          <legend className="visually-hidden">{t("People")}</legend>
          {people.length === 0 && <p>{t("Nobody matches.")}</p>}
          {people.map((u) => (
            <label key={u.user_id} className="checkbox">
              <input type="checkbox" checked={chosen.includes(u.user_id)} onChange={() => toggle(u.user_id)} /> {u.full_name}
              <span className="person-email"> {shownEmail(u)}</span>
            </label>
          ))}
        </fieldset>
        <DialogFooter onCancel={() => messageUi.closeDialog()} action={{ label: t("Start conversation"), disabled: chosen.length === 0 && people.length !== 1 }} />
      </form>
    </Dialog>
  );
}
