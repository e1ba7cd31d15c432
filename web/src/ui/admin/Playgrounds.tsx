// Code playgrounds (Zulip's "Code playgrounds" settings): a name, the code
// block language it is for, and a URL template with {code}; add and delete.
// Administrators only; the list follows realm_playgrounds events.
import { useState, type FormEvent } from "react";
import { api } from "../../api/client.ts";
import { t } from "../../i18n.ts";
import { useOrganization } from "../../model/organization.ts";
import { AdminTable, DangerButton, Section, useConfirm, useStatus } from "../settings/shared.tsx";

/** Examples in the fields (code, not text to translate). */
const EXAMPLE_LANGUAGE = "Python";
const EXAMPLE_URL = "https://python.example.com/?code={code}";

export function Playgrounds() {
  const playgrounds = useOrganization((s) => s.playgrounds);
  const [name, setName] = useState("");
  const [language, setLanguage] = useState("");
  const [url, setUrl] = useState("");
  const status = useStatus();
  const confirm = useConfirm();
  const add = async (e: FormEvent) => {
    e.preventDefault();
    if (await status.run(t("Code playground added."), () => api.post("/realm/playgrounds", { name: name.trim(), pygments_language: language.trim(), url_template: url.trim() }))) {
      setName("");
      setLanguage("");
      setUrl("");
    }
  };
  return (
    <Section id="playgrounds" title={t("Code playgrounds")}>
      <form className="page-form" onSubmit={(e) => void add(e)}>
        <label>
          {t("Language")}
          <input value={language} onChange={(e) => setLanguage(e.target.value)} required placeholder={EXAMPLE_LANGUAGE} />
        </label>
        <label>
          {t("Playground name")}
          <input value={name} onChange={(e) => setName(e.target.value)} required placeholder={t("Python playground")} />
        </label>
        <label>
          {t("URL template")}
          <input value={url} onChange={(e) => setUrl(e.target.value)} required placeholder={EXAMPLE_URL} />
        </label>
        <button type="submit" className="primary">
          {t("Add code playground")}
        </button>
      </form>
      {status.status}
      {playgrounds.length > 0 && (
        <AdminTable label={t("Code playgrounds")} columns={[t("Language"), t("Name"), t("URL template")]} actions>
          {playgrounds.map((p) => (
            <tr key={p.id}>
              <td>{p.pygments_language}</td>
              <td>{p.name}</td>
              <td>
                <code>{p.url_template}</code>
              </td>
              <td>
                <DangerButton
                  confirm={confirm}
                  label={t("Delete {{name}}", { name: p.name })}
                  title={t("Delete code playground?")}
                  text={t("{{language}} code blocks no longer offer {{name}}.", { language: p.pygments_language, name: p.name })}
                  action={t("Delete")}
                  run={() => api.delete(`/realm/playgrounds/${p.id}`)}
                >
                  {t("Delete")}
                </DangerButton>
              </td>
            </tr>
          ))}
        </AdminTable>
      )}
      {confirm.dialog}
    </Section>
  );
}
