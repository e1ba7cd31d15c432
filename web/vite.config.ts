// Builds the browser client into dist/web (hashed files under assets/),
// then writes a .gz and a .br beside each text file so the server sends
// compressed bytes without compressing per request.
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";
import { precompress } from "./precompress.ts";

export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  plugins: [react(), precompress()],
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
