import { useEffect, useState, type FormEvent } from "react";
import { ApiError } from "../api/client.ts";
import { sessionStore } from "../model/session.ts";
import { browserLanguage, setLanguage, t } from "../i18n.ts";
import { ErrorLine } from "./StatusLine.tsx";

export function LoginPage() {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Before anyone signs in, the page speaks the browser's language (Zulip's sign-in page follows Accept-Language).
  useEffect(() => void setLanguage(browserLanguage()), []);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await sessionStore.logIn(email.trim(), password);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : t("Could not log in"));
      setBusy(false);
    }
  }

  return (
    <main className="login">
      <form className="login-card" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">{t("Log in to Parley")}</h1>
        <label htmlFor="login-email">{t("Email")}</label>
        <input id="login-email" name="username" type="email" autoComplete="username" required autoFocus value={email} onChange={(e) => setEmail(e.target.value)} />
        <label htmlFor="login-password">{t("Password")}</label>
        <input id="login-password" name="password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        <ErrorLine error={error} />
        <button type="submit" className="primary" disabled={busy}>
          {t("Log in")}
        </button>
        <a className="forgot" href="/accounts/password/reset/">
          {t("Forgot your password?")}
        </a>
      </form>
    </main>
  );
}
