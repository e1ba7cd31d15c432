import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { themeStore } from "./model/theme.ts";
import { App } from "./ui/App.tsx";
import { installRenderedBehaviour } from "./ui/rendered-behaviour.ts";
import "katex/dist/katex.min.css";
import "./styles/base.css";
import "./styles/rendered.css";
import "./styles/compose.css";
import "./styles/pages.css";

themeStore.setScheme(undefined);
installRenderedBehaviour();

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
