// Linkifiers (Zulip's "Linkifiers" settings): a pattern and the URL template
// its matches link to; add, edit, delete and reorder (PATCH
// /realm/linkifiers with the new order). Administrators only; the list
// follows realm_linkifiers events.
import { useState, type FormEvent } from "react";
import { api } from "../../api/client.ts";
import { t } from "../../i18n.ts";
import { useOrganization, type Linkifier } from "../../model/organization.ts";
import { AdminTable, DangerButton, Section, useConfirm, useStatus, type Confirmation } from "../settings/shared.tsx";

function LinkifierRow({ linkifier, index, count, onMove, confirm, onSave }: { linkifier: Linkifier; index: number; count: number; onMove: (delta: number) => void; confirm: { ask: (c: Confirmation) => void }; onSave: (pattern: string, url: string) => Promise<boolean> }) {
  const [editing, setEditing] = useState(false);
  const [pattern, setPattern] = useState(linkifier.pattern);
  const [url, setUrl] = useState(linkifier.url_template);
  if (editing) {
    return (
      <tr>
        <td>
          <input aria-label={t("Pattern")} value={pattern} onChange={(e) => setPattern(e.target.value)} />
        </td>
        <td>
          <input aria-label={t("URL template")} value={url} onChange={(e) => setUrl(e.target.value)} />
        </td>
        <td className="row-actions">
          <button type="button" className="primary" onClick={() => void onSave(pattern, url).then((ok) => ok && setEditing(false))}>
            {t("Save")}
          </button>
          <button type="button" onClick={() => setEditing(false)}>
            {t("Cancel")}
          </button>
        </td>
      </tr>
    );
  }
  return (
    <tr>
      <td>
        <code>{linkifier.pattern}</code>
      </td>
      <td>
        <code>{linkifier.url_template}</code>
      </td>
      <td className="row-actions">
        <button type="button" aria-label={t("Move {{pattern}} up", { pattern: linkifier.pattern })} disabled={index === 0} onClick={() => onMove(-1)}>
          ↑
        </button>
        <button type="button" aria-label={t("Move {{pattern}} down", { pattern: linkifier.pattern })} disabled={index === count - 1} onClick={() => onMove(1)}>
          ↓
        </button>
        <button
          type="button"
          aria-label={t("Edit {{pattern}}", { pattern: linkifier.pattern })}
          onClick={() => {
            setPattern(linkifier.pattern);
            setUrl(linkifier.url_template);
            setEditing(true);
          }}
        >
          {t("Edit")}
        </button>
        <DangerButton
          confirm={confirm}
          label={t("Delete {{pattern}}", { pattern: linkifier.pattern })}
          title={t("Delete linkifier?")}
          text={t("Messages sent from now on no longer link {{pattern}}.", { pattern: linkifier.pattern })}
          action={t("Delete")}
          run={() => api.delete(`/realm/filters/${linkifier.id}`)}
        >
          {t("Delete")}
        </DangerButton>
      </td>
    </tr>
  );
}

/** Examples in the fields (code, not text to translate). */
const EXAMPLE_PATTERN = "#(?P<id>[0-9]+)";
const EXAMPLE_URL = "https://github.com/org/repo/issues/{id}";

export function Linkifiers() {
  const linkifiers = useOrganization((s) => s.linkifiers);
  const [pattern, setPattern] = useState("");
  const [url, setUrl] = useState("");
  const status = useStatus();
  const confirm = useConfirm();

  const add = async (e: FormEvent) => {
    e.preventDefault();
    if (await status.run(t("Linkifier added."), () => api.post("/realm/filters", { pattern, url_template: url }))) {
      setPattern("");
      setUrl("");
    }
  };
  const move = (index: number, delta: number) => {
    const ids = linkifiers.map((l) => l.id);
    const [id] = ids.splice(index, 1);
    ids.splice(index + delta, 0, id!);
    void status.run(t("Linkifier order saved."), () => api.patch("/realm/linkifiers", { ordered_linkifier_ids: ids }));
  };
  return (
    <Section id="linkifiers" title={t("Linkifiers")}>
      <p className="muted-text">{t("Text matching a pattern becomes a link, e.g. #(?P<id>[0-9]+) with https://github.com/org/repo/issues/{id}.")}</p>
      <form className="page-form" onSubmit={(e) => void add(e)}>
        <label>
          {t("Pattern")}
          <input value={pattern} onChange={(e) => setPattern(e.target.value)} required placeholder={EXAMPLE_PATTERN} />
        </label>
        <label>
          {t("URL template")}
          <input value={url} onChange={(e) => setUrl(e.target.value)} required placeholder={EXAMPLE_URL} />
        </label>
        <button type="submit" className="primary">
          {t("Add linkifier")}
        </button>
      </form>
      {status.status}
      {linkifiers.length > 0 && (
        <AdminTable label={t("Linkifiers")} columns={[t("Pattern"), t("URL template")]} actions>
          {linkifiers.map((l, i) => (
            <LinkifierRow
              key={l.id}
              linkifier={l}
              index={i}
              count={linkifiers.length}
              onMove={(delta) => move(i, delta)}
              onSave={(p, u) => status.run(t("Linkifier saved."), () => api.patch(`/realm/filters/${l.id}`, { pattern: p, url_template: u }))}
              confirm={confirm}
            />
          ))}
        </AdminTable>
      )}
      {confirm.dialog}
    </Section>
  );
}
