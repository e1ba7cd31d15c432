// Signed in or not: the browser session (an HttpOnly cookie the page never
// sees) and its CSRF token, which every unsafe call carries.
import { create } from "zustand";
import { api, ApiError, setCsrfToken, setUnauthorizedHandler } from "../api/client.ts";

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

export const sessionStore = {
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
    try {
      await api.post("/logout");
    } finally {
      signedOut();
    }
  },
};
