import { useState, type FormEvent } from "react";
import { ApiError } from "../api/client.ts";
import { sessionStore } from "../model/session.ts";

export function LoginPage() {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await sessionStore.logIn(email.trim(), password);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "Could not log in");
      setBusy(false);
    }
  }

  return (
    <main className="login">
      <form className="login-card" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Log in to Parley</h1>
        <label htmlFor="login-email">Email</label>
        <input id="login-email" name="username" type="email" autoComplete="username" required autoFocus value={email} onChange={(e) => setEmail(e.target.value)} />
        <label htmlFor="login-password">Password</label>
        <input id="login-password" name="password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        {error !== null && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={busy}>
          Log in
        </button>
        <a className="forgot" href="/accounts/password/reset/">
          Forgot your password?
        </a>
      </form>
    </main>
  );
}
