// The page's entry: the session and the link to the server start here, and
// the interface's code (React and every view) loads beside them, so the first
// API calls are on their way while that code downloads and compiles.
import { connection } from "./model/connection.ts";
import { sessionStore } from "./model/session.ts";
import { themeStore } from "./model/theme.ts";
import "katex/dist/katex.min.css";
import "./styles/base.css";
import "./styles/rendered.css";
import "./styles/compose.css";
import "./styles/pages.css";
import "./styles/actions.css";
import "./styles/shortcuts.css";
import "./styles/phone.css";
import "./styles/people.css";

themeStore.setScheme(undefined);
// Signed in already (the server wrote the session into the page): register the event queue now.
if (sessionStore.fromPage()) connection.start();

void import("./ui/mount.tsx").then(({ mount }) => mount(document.getElementById("root")!));
