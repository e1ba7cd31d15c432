// Builds the browser client into dist/web (hashed files under assets/),
// then writes a .gz and a .br beside each text file so the server sends
// compressed bytes without compressing per request.
import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";
import { precompress } from "./precompress.ts";

/**
 * The interface's chunk (web/src/ui/mount.tsx, imported by the entry once it
 * has started the first API calls) is named in the page too, so the browser
 * fetches and compiles it beside the entry instead of after it.
 */
function preloadInterface(): Plugin {
  return {
    name: "parley-preload-interface",
    apply: "build",
    transformIndexHtml: {
      order: "post",
      handler(_html, ctx) {
        const chunk = Object.values(ctx.bundle ?? {}).find((c) => c.type === "chunk" && c.facadeModuleId?.endsWith("/src/ui/mount.tsx"));
        if (!chunk) throw new Error("the interface chunk (src/ui/mount.tsx) is missing from the bundle");
        return [{ tag: "link", attrs: { rel: "modulepreload", crossorigin: true, href: `/${chunk.fileName}` }, injectTo: "head" }];
      },
    },
  };
}

export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  plugins: [react(), preloadInterface(), precompress()],
  build: {
    outDir: "../dist/web",
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: {
    // `npx vite --config web/vite.config.ts` during development: the API comes from a running `npm start`.
    proxy: { "/json": "http://127.0.0.1:9991", "/user_uploads": "http://127.0.0.1:9991", "/user_avatars": "http://127.0.0.1:9991" },
  },
});
