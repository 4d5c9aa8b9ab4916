// The cranwhales UI: built into dist/ and embedded in the cranwhales binary.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: { outDir: "dist", emptyOutDir: true, assetsInlineLimit: 0 },
});
