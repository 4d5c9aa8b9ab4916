// ECharts, loaded only when a tab needs it: with ECharts 6 the core and a canvas renderer alone are
// ~100 KB gzipped (measured), so the first view (All traffic) is drawn by bars.ts and this chunk
// (~200 KB gzipped: every chart type and component the app uses, tree-shaken) comes with the
// first other tab.
import { init, use } from "echarts/core";
import type { ECharts } from "echarts/core";
import { BarChart, LineChart, ScatterChart } from "echarts/charts";
import {
  BrushComponent,
  DataZoomComponent,
  GridComponent,
  LegendComponent,
  MarkLineComponent,
  TitleComponent,
  TooltipComponent,
} from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";

use([
  BarChart,
  LineChart,
  ScatterChart,
  GridComponent,
  TooltipComponent,
  LegendComponent,
  TitleComponent,
  BrushComponent,
  DataZoomComponent,
  MarkLineComponent,
  CanvasRenderer,
]);

/** A chart on `el`. */
export function create(el: HTMLElement): ECharts {
  return init(el);
}
