// The page: the sign-in form for visitors, the chat once signed in.
import { useEffect } from "react";
import { t, useLanguage } from "../i18n.ts";
import { connection } from "../model/connection.ts";
import { sessionStore, useSession } from "../model/session.ts";
import { LoginPage } from "./LoginPage.tsx";
import { MainView } from "./MainView.tsx";

export function App() {
  const status = useSession((s) => s.status);
  // Every view re-renders in a new language (t() is read during render).
  const language = useLanguage((s) => s.language);
  // Asked only when the page did not come with the session written in (src/routes/web-client.ts).
  useEffect(() => {
    if (useSession.getState().status === "checking") void sessionStore.check();
  }, []);
  useEffect(() => {
    if (status !== "signed-in") return;
    connection.start();
    return () => connection.stop();
  }, [status]);
  if (status === "checking") return <div className="splash" aria-busy="true">{t("Loading…")}</div>;
  if (status === "signed-out") return <LoginPage />;
  return <MainView key={language} />;
}
