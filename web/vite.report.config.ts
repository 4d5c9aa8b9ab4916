// The surge report runtime: one self-contained IIFE (charts + code) inlined into every report.html.
import { defineConfig } from "vite";

export default defineConfig({
  // Library mode leaves process.env.NODE_ENV in ECharts' code; a report has no `process`.
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  build: {
    outDir: "dist-report",
    emptyOutDir: true,
    lib: { entry: "src/report/main.ts", name: "SurgeReport", formats: ["iife"], fileName: () => "report.js" },
  },
});
