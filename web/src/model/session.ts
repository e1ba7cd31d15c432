// Signed in or not: the browser session (an HttpOnly cookie the page never
// sees) and its CSRF token, which every unsafe call carries.
import { create } from "zustand";
import { api, ApiError, setCsrfToken, setUnauthorizedHandler } from "../api/client.ts";
import { reading } from "./reading.ts";

export interface SessionUser {
  user_id: number;
  email: string;
}

export interface SessionState {
  status: "checking" | "signed-out" | "signed-in";
  user: SessionUser | null;
}

export const useSession = create<SessionState>(() => ({ status: "checking", user: null }));

function signedOut(): void {
  setCsrfToken(null);
  useSession.setState({ status: "signed-out", user: null });
}

setUnauthorizedHandler(signedOut);

/** What stops asking the server before the session ends (the event connection registers here), so nothing in flight meets a 401. */
const beforeLogOut: (() => void)[] = [];
export function onLogOut(stop: () => void): void {
  beforeLogOut.push(stop);
}

/** Where the server writes the signed-in session into the page (src/routes/web-client.ts). */
const SESSION_ELEMENT_ID = "parley-session";

export const sessionStore = {
  /**
   * The session the server wrote into the page, if it did (the browser was
   * signed in when it asked for the page): signed in at once, no round trip.
   * A built page without it was served to a signed-out browser: signed out at
   * once, also without asking.
   */
  fromPage(): boolean {
    const element = document.getElementById(SESSION_ELEMENT_ID);
    if (!element?.textContent) {
      // A built page from the server, without the session: signed out, nothing to ask (a 401 for nothing).
      if (document.querySelector('meta[name="parley-page"][content="session-written-in"]')) signedOut();
      return false;
    }
    try {
      const session = JSON.parse(element.textContent) as { user_id: number; email: string; csrf_token: string };
      setCsrfToken(session.csrf_token);
      useSession.setState({ status: "signed-in", user: { user_id: session.user_id, email: session.email } });
      return true;
    } catch {
      return false;
    } finally {
      element.remove();
    }
  },
  async check(): Promise<void> {
    try {
      const reply = await api.get<{ user_id: number; email: string; csrf_token: string }>("/session", {}, { quietUnauthorized: true });
      setCsrfToken(reply.csrf_token);
      useSession.setState({ status: "signed-in", user: { user_id: reply.user_id, email: reply.email } });
    } catch (error) {
      if (error instanceof ApiError && error.isNetwork) {
        // The server is not there yet: try again shortly rather than showing a sign-in form that cannot work.
        setTimeout(() => void sessionStore.check(), 2000);
        return;
      }
      signedOut();
    }
  },
  /** Throws the server's error (wrong password, rate limit…) for the form to show. */
  async logIn(username: string, password: string): Promise<void> {
    const reply = await api.post<{ user_id: number; email: string; csrf_token: string }>("/login", { username, password }, { quietUnauthorized: true });
    setCsrfToken(reply.csrf_token);
    useSession.setState({ status: "signed-in", user: { user_id: reply.user_id, email: reply.email } });
  },
  async logOut(): Promise<void> {
    // Messages marked read on the way out are asked for while the session still holds (not after: a 401).
    await reading.settle();
    for (const stop of beforeLogOut) stop();
    try {
      await api.post("/logout");
    } finally {
      signedOut();
    }
  },
};
