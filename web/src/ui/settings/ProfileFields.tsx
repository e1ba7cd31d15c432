// Your values of the organization's custom profile fields, edited per field
// type as Zulip's "Profile" settings do: short and long text, a choice, a
// date, a link, people, an external account and pronouns. Saved through
// PATCH /users/me/profile_data (cleared values through DELETE); the form
// shows what the realm_user events then say.
import { useEffect, useMemo, useState, type FormEvent } from "react";
import { api } from "../../api/client.ts";
import { t } from "../../i18n.ts";
import { externalAccountUrl, FIELD_TYPE, useProfileFields, type ProfileField } from "../../model/profile-fields.ts";
import { isAdmin } from "../../model/permissions.ts";
import { useUsers } from "../../model/users.ts";
import { saved, Section, useStatus } from "./shared.tsx";

/** How a link starts (not text to translate). */
const URL_START = "https://";

function parseData(field: ProfileField): Record<string, any> {
  try {
    return field.field_data ? (JSON.parse(field.field_data) as Record<string, any>) : {};
  } catch {
    return {};
  }
}

function userIds(value: string): number[] {
  try {
    const parsed = JSON.parse(value) as unknown;
    return Array.isArray(parsed) ? parsed.filter((x): x is number => typeof x === "number") : [];
  } catch {
    return [];
  }
}

function PeopleField({ field, value, onChange }: { field: ProfileField; value: string; onChange: (v: string) => void }) {
  const byId = useUsers((s) => s.byId);
  const chosen = userIds(value);
  const others = Object.values(byId)
    .filter((u) => u.is_active !== false && !u.is_bot && !chosen.includes(u.user_id))
    .sort((a, b) => a.full_name.localeCompare(b.full_name));
  return (
    <fieldset className="profile-people">
      <legend>{field.name}</legend>
      {field.hint && <span className="muted-text">{field.hint}</span>}
      <ul className="chip-list">
        {chosen.map((id) => (
          <li key={id} className="chip">
            {byId[id]?.full_name ?? t("Unknown user")}
            <button type="button" aria-label={t("Remove {{name}} from {{field}}", { name: byId[id]?.full_name ?? "", field: field.name })} onClick={() => onChange(JSON.stringify(chosen.filter((c) => c !== id)))}>
              ×
            </button>
          </li>
        ))}
      </ul>
      <select
        aria-label={t("Add a person to {{field}}", { field: field.name })}
        value=""
        onChange={(e) => {
          const id = Number(e.target.value);
          if (id) onChange(JSON.stringify([...chosen, id]));
        }}
      >
        <option value="">{t("Add a person…")}</option>
        {others.map((u) => (
          <option key={u.user_id} value={u.user_id}>
            {u.full_name}
          </option>
        ))}
      </select>
    </fieldset>
  );
}

function FieldInput({ field, value, onChange }: { field: ProfileField; value: string; onChange: (v: string) => void }) {
  const data = parseData(field);
  const hint = field.hint ? <span className="muted-text">{field.hint}</span> : null;
  switch (field.type) {
    case FIELD_TYPE.LONG_TEXT:
      return (
        <label>
          {field.name}
          {hint}
          <textarea rows={3} value={value} onChange={(e) => onChange(e.target.value)} />
        </label>
      );
    case FIELD_TYPE.SELECT: {
      const options = Object.entries(data as Record<string, { text: string; order: string | number }>).sort((a, b) => Number(a[1].order) - Number(b[1].order));
      return (
        <label>
          {field.name}
          {hint}
          <select value={value} onChange={(e) => onChange(e.target.value)}>
            <option value="">{t("Not set")}</option>
            {options.map(([key, o]) => (
              <option key={key} value={key}>
                {o.text}
              </option>
            ))}
          </select>
        </label>
      );
    }
    case FIELD_TYPE.DATE:
      return (
        <label>
          {field.name}
          {hint}
          <input type="date" value={value} onChange={(e) => onChange(e.target.value)} />
        </label>
      );
    case FIELD_TYPE.URL:
      return (
        <label>
          {field.name}
          {hint}
          <input type="url" inputMode="url" placeholder={URL_START} value={value} onChange={(e) => onChange(e.target.value)} />
        </label>
      );
    case FIELD_TYPE.USER:
      return <PeopleField field={field} value={value} onChange={onChange} />;
    case FIELD_TYPE.EXTERNAL_ACCOUNT: {
      const url = value ? externalAccountUrl(field.field_data, value) : null;
      return (
        <label>
          {field.name}
          {hint}
          <input value={value} autoComplete="off" onChange={(e) => onChange(e.target.value)} />
          {url && <span className="muted-text">{url}</span>}
        </label>
      );
    }
    case FIELD_TYPE.PRONOUNS:
      return (
        <label>
          {field.name}
          {hint}
          <input value={value} list="pronoun-suggestions" onChange={(e) => onChange(e.target.value)} />
          <datalist id="pronoun-suggestions">
            <option value={t("he/him")} />
            <option value={t("she/her")} />
            <option value={t("they/them")} />
          </datalist>
        </label>
      );
    default:
      return (
        <label>
          {field.name}
          {hint}
          <input value={value} onChange={(e) => onChange(e.target.value)} />
        </label>
      );
  }
}

export function ProfileFields() {
  const fields = useProfileFields((s) => s.fields);
  const selfId = useUsers((s) => s.selfId);
  const stored = useUsers((s) => s.byId[s.selfId]?.profile_data);
  const admin = isAdmin();
  const editable = useMemo(() => fields.filter((f) => f.editable_by_user !== false || admin), [fields, admin]);
  const storedValues = useMemo(() => Object.fromEntries(editable.map((f) => [f.id, stored?.[f.id]?.value ?? ""])), [editable, stored]);
  const [values, setValues] = useState<Record<number, string>>(storedValues);
  // What the events say replaces the form's values (another tab, an administrator, our own save).
  useEffect(() => setValues(storedValues), [storedValues]);
  const status = useStatus();
  if (editable.length === 0 || !selfId) return null;

  const save = (e: FormEvent) => {
    e.preventDefault();
    const changed = editable.filter((f) => (values[f.id] ?? "") !== (storedValues[f.id] ?? ""));
    const set = changed.filter((f) => (values[f.id] ?? "").trim() !== "" && !(f.type === FIELD_TYPE.USER && userIds(values[f.id]!).length === 0));
    const cleared = changed.filter((f) => !set.includes(f));
    void status.run(saved(t("Profile fields")), async () => {
      if (set.length > 0) await api.patch("/users/me/profile_data", { data: set.map((f) => ({ id: f.id, value: f.type === FIELD_TYPE.USER ? userIds(values[f.id]!) : values[f.id]!.trim() })) });
      if (cleared.length > 0) await api.delete("/users/me/profile_data", { data: cleared.map((f) => f.id) });
    });
  };
  return (
    <Section id="profile-fields" title={t("Profile fields")}>
      <form className="page-form" onSubmit={save}>
        {editable.map((f) => (
          <FieldInput key={f.id} field={f} value={values[f.id] ?? ""} onChange={(v) => setValues((vs) => ({ ...vs, [f.id]: v }))} />
        ))}
        <button type="submit" className="primary">
          {t("Save profile fields")}
        </button>
      </form>
      {status.status}
    </Section>
  );
}
