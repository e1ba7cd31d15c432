// The organization's icon (Zulip's "Organization profile" icon): upload an
// image or go back to the default (the organization's initial). Administrators
// only; the picture follows the realm update_dict "icon" event.
import { useRef } from "react";
import { api, postFile } from "../../api/client.ts";
import { t } from "../../i18n.ts";
import { useRealm } from "../../model/realm.ts";
import { Section, useConfirm, useStatus } from "../settings/shared.tsx";

export function OrganizationIcon() {
  const url = useRealm((s) => s.settings.icon_url as string | undefined);
  const source = useRealm((s) => s.settings.icon_source as string | undefined);
  const name = useRealm((s) => s.realmName);
  const file = useRef<HTMLInputElement>(null);
  const status = useStatus();
  const confirm = useConfirm();
  const uploaded = source === "U";
  return (
    <Section id="organization-icon" title={t("Organization icon")}>
      <div className="settings-avatar">
        {url ? <img className="org-icon" src={url} alt={t("Icon of {{name}}", { name })} width={64} height={64} /> : null}
        <input
          ref={file}
          type="file"
          accept="image/*"
          className="visually-hidden"
          aria-label={t("Icon image")}
          tabIndex={-1}
          onChange={(e) => {
            const f = e.target.files?.[0];
            e.target.value = "";
            if (f) void status.run(t("Organization icon uploaded."), () => postFile("/realm/icon", f));
          }}
        />
        <button type="button" onClick={() => file.current?.click()}>
          {t("Upload icon")}
        </button>
        {uploaded && (
          <button
            type="button"
            onClick={() =>
              confirm.ask({
                title: t("Delete the organization icon?"),
                text: t("The organization's initial is shown instead."),
                action: t("Delete"),
                danger: true,
                run: () => api.delete("/realm/icon"),
              })
            }
          >
            {t("Delete icon")}
          </button>
        )}
      </div>
      {status.status}
      {confirm.dialog}
    </Section>
  );
}
