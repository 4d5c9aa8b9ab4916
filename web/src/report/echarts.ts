// Only the ECharts parts the report draws with, so the inlined runtime stays small.
import * as echarts from "echarts/core";
import { BarChart, BoxplotChart, CustomChart, LineChart, ScatterChart } from "echarts/charts";
import {
  DataZoomComponent,
  GridComponent,
  LegendComponent,
  MarkAreaComponent,
  MarkLineComponent,
  TitleComponent,
  TooltipComponent,
} from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";

echarts.use([
  BarChart, BoxplotChart, CustomChart, LineChart, ScatterChart, DataZoomComponent, GridComponent,
  LegendComponent, MarkAreaComponent, MarkLineComponent, TitleComponent, TooltipComponent,
  CanvasRenderer,
]);

export { echarts };
