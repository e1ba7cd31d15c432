// Your own status in the personal menu: what it is, "Set status" (the dialog
// loads on first use), clearing it, and invisible mode (Zulip's: others see
// you offline; the presence_enabled setting, PATCH /settings).
import { lazy, Suspense, useState } from "react";
import { api, ApiError } from "../api/client.ts";
import { t } from "../i18n.ts";
import { useSettings } from "../model/settings.ts";
import { openStatusDialog, useStatusDialog } from "../model/status-dialog.ts";
import { useUserStatus } from "../model/user-status.ts";
import { useUsers } from "../model/users.ts";
import { StatusEmoji } from "./StatusEmoji.tsx";

const StatusDialog = lazy(() => import("./StatusDialog.tsx"));

export function StatusDialogHost() {
  const open = useStatusDialog((s) => s.open);
  if (!open) return null;
  return (
    <Suspense fallback={null}>
      <StatusDialog />
    </Suspense>
  );
}

export function OwnStatusMenuItems({ onDone }: { onDone: () => void }) {
  const status = useUserStatus((s) => s.byUser[useUsers.getState().selfId]);
  const invisible = useSettings((s) => s.settings.presence_enabled === false);
  const [error, setError] = useState<string | null>(null);
  const hasStatus = Boolean(status?.status_text || status?.emoji_name);
  const run = (action: () => Promise<unknown>) => {
    setError(null);
    action().then(onDone, (e: unknown) => setError(e instanceof ApiError || e instanceof Error ? e.message : String(e)));
  };
  return (
    <>
      {hasStatus && (
        <div className="menu-info own-status">
          <StatusEmoji status={status} /> {status?.status_text}
        </div>
      )}
      <button
        type="button"
        role="menuitem"
        onClick={() => {
          onDone();
          openStatusDialog();
        }}
      >
        {hasStatus ? t("Edit status") : t("Set status")}
      </button>
      {hasStatus && (
        <button type="button" role="menuitem" onClick={() => run(() => api.post("/users/me/status", { status_text: "", emoji_name: "" }))}>
          {t("Clear status")}
        </button>
      )}
      <button type="button" role="menuitemcheckbox" aria-checked={invisible} onClick={() => run(() => api.patch("/settings", { presence_enabled: invisible }))}>
        {t("Invisible mode")}
      </button>
      {error && (
        <div className="menu-info form-error" role="alert">
          {error}
        </div>
      )}
    </>
  );
}
