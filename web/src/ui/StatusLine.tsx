// The line under a settings form: what was saved, or why the server refused.
export interface Status {
  ok: boolean;
  text: string;
}

export function StatusLine({ status }: { status: Status | null }) {
  if (!status) return null;
  return (
    <p className={status.ok ? "form-ok" : "form-error"} role={status.ok ? "status" : "alert"}>
      {status.text}
    </p>
  );
}

/** Why something failed, under the form or list it concerns; nothing while there is no error. */
export function ErrorLine({ error }: { error: string | null | undefined }) {
  return <StatusLine status={error ? { ok: false, text: error } : null} />;
}
