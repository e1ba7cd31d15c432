// Builds the browser client into dist/web (hashed files under assets/),
// then writes a .gz and a .br beside each text file so the server sends
// compressed bytes without compressing per request.
import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";
import { precompress } from "./precompress.ts";

/**
 * The interface's chunk (web/src/ui/mount.tsx, imported by the entry once it
 * has started the first API calls) is named in the page too, so the browser
 * fetches and compiles it beside the entry instead of after it. The built page
 * also says that the server writes the session into it (a page from the
 * development server does not: that client asks GET /json/session).
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
        return [
          { tag: "link", attrs: { rel: "modulepreload", crossorigin: true, href: `/${chunk.fileName}` }, injectTo: "head" },
          // The page comes from Parley's server, which writes the session in when the browser is signed in:
          // without it the client knows it is signed out, with no GET /json/session (src/routes/web-client.ts).
          { tag: "meta", attrs: { name: "parley-page", content: "session-written-in" }, injectTo: "head" },
        ];
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
    // Every file under assets/, never inlined as a data: URL: the page's CSP allows images from the server only.
    assetsInlineLimit: 0,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: {
    // `npx vite --config web/vite.config.ts` during development: the API comes from a running `npm start`.
    proxy: { "/json": "http://127.0.0.1:9991", "/user_uploads": "http://127.0.0.1:9991", "/user_avatars": "http://127.0.0.1:9991" },
  },
});
