// The interface, put into the page by main.tsx once its code has loaded.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App.tsx";
import { installRenderedBehaviour } from "./rendered-behaviour.ts";

export function mount(root: HTMLElement): void {
  installRenderedBehaviour();
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}
