// The cranwhales UI: built into dist/ and embedded in the cranwhales binary (no CDN: works offline).
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: { outDir: "dist", emptyOutDir: true, assetsInlineLimit: 0, chunkSizeWarningLimit: 1200 },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
});
