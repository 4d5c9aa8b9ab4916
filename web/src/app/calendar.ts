// The calendar of the whole history in the sidebar: one row per year (newest first), a cell per
// day in weeks × weekdays, stored days shaded by downloads (4 steps on a log scale). A stored
// day's cell opens it in one click; any cell also opens its month below as a grid of larger
// cells, where an unstored day is one click from its fetch. ~5,200 days are ~5,200 SVG rects.
import type { Calendar as CalendarData } from "./api";
import { int } from "./format";

const PITCH = 3.75;
const CELL = 3.1;
const SHADES = ["#4b7c99", "#5fa3cc", "#8fd0f5", "#d8f1ff"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

const DAY_MS = 86_400_000;
const ms = (date: string) => Date.parse(`${date}T00:00:00Z`);
const iso = (t: number) => new Date(t).toISOString().slice(0, 10);
/** Monday-based weekday, 0–6. */
const weekday = (t: number) => (new Date(t).getUTCDay() + 6) % 7;

export class Calendar {
  private stored = new Map<string, number>();
  private first = "2012-10-01";
  private last = iso(Date.now() - DAY_MS);
  private current = "";
  private month = "";

  constructor(
    private root: HTMLElement,
    /** Opens a day (fetching it when it is not stored). */
    private open: (date: string) => void,
  ) {
    root.addEventListener("click", (e) => {
      const t = e.target as Element;
      const step = t.closest<HTMLElement>("[data-step]");
      if (step) return this.step(Number(step.dataset.step));
      const cell = t.closest<Element>("[data-date]");
      if (!cell) return;
      e.preventDefault();
      const date = cell.getAttribute("data-date")!;
      this.month = date.slice(0, 7);
      if (cell.tagName === "rect" && !this.stored.has(date)) return this.drawMonth();
      this.open(date);
    });
  }

  /** The stored days changed. */
  set(c: CalendarData) {
    this.first = c.first;
    this.last = c.last;
    this.stored = new Map(c.days.map((d) => [d.date, d.downloads]));
    this.draw();
  }

  /** Marks `date` as the one shown and opens its month. */
  select(date: string) {
    this.current = date;
    this.month = date.slice(0, 7);
    for (const el of this.root.querySelectorAll(".current")) el.classList.remove("current");
    this.root.querySelector(`rect[data-date="${date}"]`)?.classList.add("current");
    this.drawMonth();
  }

  /** Shade of a day's downloads among all stored days (log scale). */
  private shade(): (n: number) => string {
    const logs = [...this.stored.values()].map((n) => Math.log(Math.max(1, n)));
    const lo = Math.min(...logs);
    const hi = Math.max(...logs);
    return (n) => {
      const f = hi > lo ? (Math.log(Math.max(1, n)) - lo) / (hi - lo) : 1;
      return SHADES[Math.min(3, Math.floor(f * 4))];
    };
  }

  private draw() {
    const shade = this.shade();
    const firstYear = Number(this.first.slice(0, 4));
    const lastYear = Number(this.last.slice(0, 4));
    const [lo, hi] = [ms(this.first), ms(this.last)];
    const rows: string[] = [];
    for (let y = lastYear; y >= firstYear; y--) {
      const jan1 = Date.UTC(y, 0, 1);
      const offset = weekday(jan1);
      const rects: string[] = [];
      let count = 0;
      for (let t = Math.max(jan1, lo); t <= Math.min(Date.UTC(y, 11, 31), hi); t += DAY_MS) {
        const date = iso(t);
        const doy = Math.round((t - jan1) / DAY_MS);
        const x = Math.floor((doy + offset) / 7) * PITCH;
        const yy = weekday(t) * PITCH;
        const n = this.stored.get(date);
        if (n !== undefined) count++;
        const cls = n === undefined ? "day" : "day stored";
        const fill = n === undefined ? "#34434a" : shade(n);
        const title = n === undefined ? `${date}: not stored (click to see its month, then fetch it)` : `${date}: ${int(n)} downloads`;
        rects.push(`<rect class="${cls}${date === this.current ? " current" : ""}" data-date="${date}" x="${x}" y="${yy}" width="${CELL}" height="${CELL}" fill="${fill}"><title>${title}</title></rect>`);
      }
      rows.push(
        `<div class="cal-year" data-year="${y}"><div class="cal-year-head"><span>${y}</span><span>${count} stored</span></div>` +
          `<svg width="${54 * PITCH}" height="${7 * PITCH}" role="img" aria-label="${y}: ${count} stored days">${rects.join("")}</svg></div>`,
      );
    }
    this.root.querySelector(".cal-years")!.innerHTML = rows.join("");
    this.drawMonth();
  }

  private step(by: number) {
    const [y, m] = this.month.split("-").map(Number);
    const t = Date.UTC(y, m - 1 + by, 1);
    const next = iso(t).slice(0, 7);
    if (next < this.first.slice(0, 7) || next > this.last.slice(0, 7)) return;
    this.month = next;
    this.drawMonth();
  }

  /** The chosen month as a grid of day links: stored (shaded), not stored (fetch), out of range. */
  private drawMonth() {
    const box = this.root.querySelector(".cal-month")!;
    if (!this.month) return void (box.innerHTML = "");
    const [y, m] = this.month.split("-").map(Number);
    const start = Date.UTC(y, m - 1, 1);
    const days = new Date(Date.UTC(y, m, 0)).getUTCDate();
    const shade = this.shade();
    const cells: string[] = ["Mo", "Tu", "We", "Th", "Fr", "Sa", "Su"].map((d) => `<span class="cal-wd">${d}</span>`);
    for (let i = 0; i < weekday(start); i++) cells.push("<span></span>");
    for (let d = 1; d <= days; d++) {
      const date = iso(start + (d - 1) * DAY_MS);
      const n = this.stored.get(date);
      const cur = date === this.current ? " current" : "";
      if (date < this.first || date > this.last) cells.push(`<span class="cal-out">${d}</span>`);
      else if (n === undefined) cells.push(`<a href="?date=${date}" class="cal-cell fetch${cur}" data-date="${date}" title="${date}: not stored — click to fetch it">${d}</a>`);
      else cells.push(`<a href="?date=${date}" class="cal-cell stored${cur}" data-date="${date}" style="background:${shade(n)}" title="${date}: ${int(n)} downloads">${d}</a>`);
    }
    box.innerHTML =
      `<div class="cal-month-head"><button type="button" data-step="-1" aria-label="previous month">‹</button>` +
      `<span>${MONTHS[m - 1]} ${y}</span><button type="button" data-step="1" aria-label="next month">›</button></div>` +
      `<div class="cal-grid">${cells.join("")}</div>`;
  }
}
