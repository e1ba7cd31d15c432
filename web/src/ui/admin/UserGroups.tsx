// User groups (Zulip's "Groups" settings): create a group, rename it,
// change its members, deactivate it. Creating is for can_create_groups;
// changing a group for can_manage_all_groups or the group's own
// can_manage_group (members also can_add_members_group). The list follows
// user_group events (model/permissions.ts keeps the groups).
import { useState, type FormEvent } from "react";
import { api } from "../../api/client.ts";
import { t } from "../../i18n.ts";
import { canCreateGroups, canManageGroup, usePermissionInputs, usePermissions, type UserGroup } from "../../model/permissions.ts";
import { useUsers } from "../../model/users.ts";
import { Section, useConfirm, useStatus, type Confirmation } from "../settings/shared.tsx";

type Group = UserGroup & { description?: string; is_system_group?: boolean; can_manage_group?: unknown; can_add_members_group?: unknown };

function GroupEditor({ group, onDone, run, ask }: { group: Group; onDone: () => void; run: (done: string, action: () => Promise<unknown>) => Promise<boolean>; ask: (c: Confirmation) => void }) {
  const byId = useUsers((s) => s.byId);
  const [name, setName] = useState(group.name);
  const [description, setDescription] = useState(group.description ?? "");
  const manage = canManageGroup(group);
  const addMembers = canManageGroup(group, "add_members");
  const others = Object.values(byId)
    .filter((u) => u.is_active !== false && !group.members.includes(u.user_id))
    .sort((a, b) => a.full_name.localeCompare(b.full_name));
  const members = [...group.members].sort((a, b) => (byId[a]?.full_name ?? "").localeCompare(byId[b]?.full_name ?? ""));
  const save = (e: FormEvent) => {
    e.preventDefault();
    void run(t("Group {{name}} saved.", { name: name.trim() }), () => api.patch(`/user_groups/${group.id}`, { name: name.trim(), description }));
  };
  return (
    <div className="group-editor" role="group" aria-label={t("Edit group {{name}}", { name: group.name })}>
      {manage && (
        <form className="page-form" onSubmit={save}>
          <label>
            {t("Group name")}
            <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <label>
            {t("Group description")}
            <input value={description} onChange={(e) => setDescription(e.target.value)} />
          </label>
          <button type="submit" className="primary">
            {t("Save group")}
          </button>
        </form>
      )}
      <ul className="chip-list" aria-label={t("Members of {{name}}", { name: group.name })}>
        {members.map((id) => (
          <li key={id} className="chip">
            {byId[id]?.full_name ?? t("Unknown user")}
            {manage && (
              <button
                type="button"
                aria-label={t("Remove {{name}} from {{group}}", { name: byId[id]?.full_name ?? "", group: group.name })}
                onClick={() => void run(t("Member removed."), () => api.post(`/user_groups/${group.id}/members`, { delete: [id] }))}
              >
                ×
              </button>
            )}
          </li>
        ))}
      </ul>
      {addMembers && (
        <label>
          {t("Add a member")}
          <select
            value=""
            onChange={(e) => {
              const id = Number(e.target.value);
              if (id) void run(t("Member added."), () => api.post(`/user_groups/${group.id}/members`, { add: [id] }));
            }}
          >
            <option value="">{t("Choose a person…")}</option>
            {others.map((u) => (
              <option key={u.user_id} value={u.user_id}>
                {u.full_name}
              </option>
            ))}
          </select>
        </label>
      )}
      <div className="row-actions">
        {manage && (
          <button
            type="button"
            className="danger"
            onClick={() =>
              ask({
                title: t("Deactivate {{name}}?", { name: group.name }),
                text: t("The group can no longer be mentioned or used in permissions; its members stay."),
                action: t("Deactivate"),
                danger: true,
                run: async () => {
                  await api.post(`/user_groups/${group.id}/deactivate`);
                  onDone();
                },
              })
            }
          >
            {t("Deactivate group")}
          </button>
        )}
        <button type="button" onClick={onDone}>
          {t("Close")}
        </button>
      </div>
    </div>
  );
}

export function UserGroups() {
  usePermissionInputs();
  const groups = usePermissions((s) => s.groups);
  const selfId = useUsers((s) => s.selfId);
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [open, setOpen] = useState<number | null>(null);
  const status = useStatus();
  const confirm = useConfirm();
  const list = (Object.values(groups) as Group[]).filter((g) => !g.is_system_group && !g.deactivated).sort((a, b) => a.name.localeCompare(b.name));
  const create = async (e: FormEvent) => {
    e.preventDefault();
    if (await status.run(t("Group {{name}} created.", { name: name.trim() }), () => api.post("/user_groups/create", { name: name.trim(), description, members: [selfId] }))) {
      setName("");
      setDescription("");
    }
  };
  return (
    <Section id="user-groups" title={t("User groups")}>
      {canCreateGroups() && (
        <form className="page-form" onSubmit={(e) => void create(e)}>
          <label>
            {t("New group name")}
            <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <label>
            {t("New group description")}
            <input value={description} onChange={(e) => setDescription(e.target.value)} />
          </label>
          <button type="submit" className="primary">
            {t("Create group")}
          </button>
        </form>
      )}
      {status.status}
      {list.length === 0 ? (
        <p className="muted-text">{t("There are no user groups yet.")}</p>
      ) : (
        <ul className="group-list" aria-label={t("User groups")}>
          {list.map((g) => (
            <li key={g.id}>
              <div className="group-row">
                <strong>{g.name}</strong>
                <span className="muted-text">{g.description}</span>
                <span className="muted-text">{g.members.length === 1 ? t("1 member") : t("{{count}} members", { count: g.members.length })}</span>
                <button type="button" aria-expanded={open === g.id} onClick={() => setOpen(open === g.id ? null : g.id)}>
                  {canManageGroup(g, "add_members") ? t("Edit {{name}}", { name: g.name }) : t("Members of {{name}}", { name: g.name })}
                </button>
              </div>
              {open === g.id && <GroupEditor group={g} onDone={() => setOpen(null)} run={status.run} ask={confirm.ask} />}
            </li>
          ))}
        </ul>
      )}
      {confirm.dialog}
    </Section>
  );
}
