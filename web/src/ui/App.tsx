// The page: the sign-in form for visitors, the chat once signed in.
import { useEffect } from "react";
import { connection } from "../model/connection.ts";
import { sessionStore, useSession } from "../model/session.ts";
import { LoginPage } from "./LoginPage.tsx";
import { MainView } from "./MainView.tsx";

export function App() {
  const status = useSession((s) => s.status);
  // Asked only when the page did not come with the session written in (src/routes/web-client.ts).
  useEffect(() => {
    if (useSession.getState().status === "checking") void sessionStore.check();
  }, []);
  useEffect(() => {
    if (status !== "signed-in") return;
    connection.start();
    return () => connection.stop();
  }, [status]);
  if (status === "checking") return <div className="splash" aria-busy="true">Loading…</div>;
  if (status === "signed-out") return <LoginPage />;
  return <MainView />;
}
