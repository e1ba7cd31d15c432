// Custom emoji (Zulip's "Custom emoji" settings): upload one under a name,
// list the organization's emoji with their authors, deactivate one. Adding
// is for can_add_custom_emoji_group, deactivating for administrators and the
// emoji's author; the list follows realm_emoji events.
import { useRef, useState, type FormEvent } from "react";
import { api, postFile } from "../../api/client.ts";
import { t } from "../../i18n.ts";
import { useEmoji } from "../../model/emoji.ts";
import { canAddCustomEmoji, canDeactivateEmoji, usePermissionInputs } from "../../model/permissions.ts";
import { userName, useUsers } from "../../model/users.ts";
import { AdminTable, DangerButton, Section, useConfirm, useStatus } from "../settings/shared.tsx";

/** Zulip's rule for names: lowercase letters, digits, "_", "-" and spaces between them. */
const NAME = /^[0-9a-z][0-9a-z_\- ]*[0-9a-z]$|^[0-9a-z]$/;

/** An example name (an emoji name, not text to translate). */
const EXAMPLE_NAME = "party_parrot";

export function CustomEmoji() {
  usePermissionInputs();
  const realm = useEmoji((s) => s.realm);
  useUsers((s) => s.byId);
  const [name, setName] = useState("");
  const file = useRef<HTMLInputElement>(null);
  const status = useStatus();
  const confirm = useConfirm();
  const mayAdd = canAddCustomEmoji();
  const emoji = Object.values(realm)
    .filter((e) => !e.deactivated)
    .sort((a, b) => a.name.localeCompare(b.name));

  const upload = async (e: FormEvent) => {
    e.preventDefault();
    const f = file.current?.files?.[0];
    const clean = name.trim().toLowerCase().replace(/^:|:$/g, "");
    if (!f) {
      status.set({ ok: false, text: t("Choose an image to upload.") });
      return;
    }
    if (!NAME.test(clean)) {
      status.set({ ok: false, text: t("Emoji names may contain only lowercase letters, digits, spaces, dashes and underscores.") });
      return;
    }
    if (await status.run(t("Custom emoji :{{name}}: added.", { name: clean }), () => postFile(`/realm/emoji/${encodeURIComponent(clean)}`, f))) {
      setName("");
      if (file.current) file.current.value = "";
    }
  };

  return (
    <Section id="custom-emoji" title={t("Custom emoji")}>
      {mayAdd ? (
        <form className="page-form" onSubmit={(e) => void upload(e)}>
          <label>
            {t("Emoji name")}
            <input value={name} onChange={(e) => setName(e.target.value)} required placeholder={EXAMPLE_NAME} />
          </label>
          <label>
            {t("Emoji image")}
            <input ref={file} type="file" accept="image/png,image/gif,image/jpeg,image/webp" required />
          </label>
          <button type="submit" className="primary">
            {t("Add emoji")}
          </button>
        </form>
      ) : (
        <p className="muted-text">{t("You may not add custom emoji in this organization.")}</p>
      )}
      {status.status}
      {emoji.length > 0 && (
        <AdminTable label={t("Custom emoji")} columns={[t("Name"), t("Image"), t("Author")]} actions>
          {emoji.map((e) => {
            const author = (e as { author_id?: number | null }).author_id;
            return (
              <tr key={e.id}>
                <td>:{e.name}:</td>
                <td>
                  <img className="emoji-preview" src={e.still_url ?? e.source_url} alt={`:${e.name}:`} width={24} height={24} />
                </td>
                <td>{author ? userName(author) : t("Unknown")}</td>
                <td>
                  {canDeactivateEmoji(author) && (
                    <DangerButton
                      confirm={confirm}
                      title={t("Deactivate custom emoji?")}
                      text={t("Messages and reactions that use :{{name}}: keep showing it, but nobody can use it any more.", { name: e.name })}
                      action={t("Deactivate")}
                      run={() => api.delete(`/realm/emoji/${encodeURIComponent(e.name)}`)}
                    >
                      {t("Deactivate :{{name}}:", { name: e.name })}
                    </DangerButton>
                  )}
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
