// The calendar of the whole history in the sidebar. Above: one row per year (newest first), twelve
// month buttons each, a bar under each month as long as the share of its days that are stored and
// the count in its title; the list opens scrolled to the year being shown. Below: the chosen month
// as a grid of day cells (at least 26 × 26 px), stored days shaded by downloads (4 steps on a log
// scale), an unstored day one click from its fetch. So a day years back is two clicks away: its
// month, then the day. Keyboard: arrows move the focused day (across months), Enter opens it.
import type { Calendar as CalendarData } from "./api";
import { int } from "./format";

const SHADES = ["#6fa8c8", "#8cc4e4", "#b3dcf3", "#e0f4ff"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

const DAY_MS = 86_400_000;
const ms = (date: string) => Date.parse(`${date}T00:00:00Z`);
const iso = (t: number) => new Date(t).toISOString().slice(0, 10);
/** Monday-based weekday, 0–6. */
const weekday = (t: number) => (new Date(t).getUTCDay() + 6) % 7;
/** Days in month `m` (1–12) of year `y`. */
const monthDays = (y: number, m: number) => new Date(Date.UTC(y, m, 0)).getUTCDate();
/** Arrow keys → days to move. */
const MOVES: Record<string, number> = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -7, ArrowDown: 7 };

export class Calendar {
  private stored = new Map<string, number>();
  private first = "2012-10-01";
  private last = iso(Date.now() - DAY_MS);
  private current = "";
  private month = "";
  /** The year the year list was last scrolled to (scrolled again only when it changes). */
  private scrolledTo = "";

  constructor(
    private root: HTMLElement,
    /** Opens a day (fetching it when it is not stored). */
    private open: (date: string) => void,
  ) {
    root.addEventListener("click", (e) => {
      const t = e.target as Element;
      const step = t.closest<HTMLElement>("[data-step]");
      if (step) return this.step(Number(step.dataset.step));
      const mon = t.closest<HTMLElement>("[data-month]");
      if (mon) {
        this.month = mon.dataset.month!;
        this.drawMonth();
        this.root.querySelector<HTMLElement>(".cal-month")?.scrollIntoView({ block: "nearest" });
        return;
      }
      const cell = t.closest<HTMLElement>("a[data-date]");
      if (!cell) return;
      e.preventDefault();
      this.open(cell.dataset.date!);
    });
    root.addEventListener("keydown", (e) => {
      const cell = (e.target as Element).closest<HTMLElement>(".cal-grid a[data-date]");
      const by = MOVES[e.key];
      if (!cell || by === undefined) return;
      e.preventDefault();
      const next = iso(ms(cell.dataset.date!) + by * DAY_MS);
      if (next < this.first || next > this.last) return;
      if (next.slice(0, 7) !== this.month) {
        this.month = next.slice(0, 7);
        this.drawMonth();
      }
      this.root.querySelector<HTMLElement>(`.cal-grid a[data-date="${next}"]`)?.focus();
    });
  }

  /** The stored days changed. */
  set(c: CalendarData) {
    this.first = c.first;
    this.last = c.last;
    this.stored = new Map(c.days.map((d) => [d.date, d.downloads]));
    this.draw();
  }

  /** Marks `date` as the one shown, opens its month and scrolls the years to its year. */
  select(date: string) {
    this.current = date;
    this.month = date.slice(0, 7);
    for (const el of this.root.querySelectorAll(".cal-years .current")) el.classList.remove("current");
    this.root.querySelector(`[data-month="${this.month}"]`)?.classList.add("current");
    this.drawMonth();
    this.scrollToYear();
  }

  /** Scrolls the year list so the shown day's year is its first row (once per year); a year
   * among the last rows, where the list cannot scroll that far, is shown by scrolling to its end,
   * on a row's top too: no row is cut by the list's top edge. */
  private scrollToYear() {
    const year = this.current.slice(0, 4);
    const list = this.root.querySelector<HTMLElement>(".cal-years");
    const row = this.root.querySelector<HTMLElement>(`.cal-year[data-year="${year}"]`);
    if (!list || !row || year === this.scrolledTo || list.clientHeight === 0) return;
    this.scrolledTo = year;
    // .cal-years is positioned: a row's offsetTop is measured from the list's top. Its height is
    // whole rows (style.css), so its end is a row's top; should it not be (a browser without CSS
    // round()), the last row top it can reach keeps the top row whole.
    const end = list.scrollHeight - list.clientHeight;
    let top = 0;
    for (const r of list.querySelectorAll<HTMLElement>(".cal-year")) {
      if (r.offsetTop <= Math.min(row.offsetTop, end)) top = r.offsetTop;
    }
    list.scrollTop = top;
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
    const firstYear = Number(this.first.slice(0, 4));
    const lastYear = Number(this.last.slice(0, 4));
    const perMonth = new Map<string, number>();
    for (const d of this.stored.keys()) perMonth.set(d.slice(0, 7), (perMonth.get(d.slice(0, 7)) ?? 0) + 1);
    const rows: string[] = [];
    for (let y = lastYear; y >= firstYear; y--) {
      let count = 0;
      const months: string[] = [];
      for (let m = 1; m <= 12; m++) {
        const key = `${y}-${String(m).padStart(2, "0")}`;
        const name = MONTHS[m - 1];
        if (key < this.first.slice(0, 7) || key > this.last.slice(0, 7)) {
          months.push(`<span class="cal-mon cal-mon-out" aria-hidden="true">${name.slice(0, 3)}</span>`);
          continue;
        }
        const n = perMonth.get(key) ?? 0;
        count += n;
        const frac = n / monthDays(y, m);
        const cur = key === this.current.slice(0, 7) ? " current" : "";
        months.push(
          `<button type="button" class="cal-mon${n ? " has" : ""}${cur}" data-month="${key}" title="${name} ${y}: ${n} of ${monthDays(y, m)} days stored" aria-label="${name.slice(0, 3)} ${y}, ${n} days stored">` +
            `${name.slice(0, 3)}<i style="width:${Math.round(frac * 100)}%"></i></button>`,
        );
      }
      rows.push(
        `<div class="cal-year" data-year="${y}"><div class="cal-year-head"><span>${y}</span><span>${count ? `${count} stored` : "none stored"}</span></div>` +
          `<div class="cal-months">${months.join("")}</div></div>`,
      );
    }
    this.root.querySelector(".cal-years")!.innerHTML = rows.join("");
    this.drawMonth();
    this.scrollToYear();
  }

  private step(by: number) {
    const [y, m] = this.month.split("-").map(Number);
    const next = iso(Date.UTC(y, m - 1 + by, 1)).slice(0, 7);
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
    const days = monthDays(y, m);
    const shade = this.shade();
    const cells: string[] = ["Mo", "Tu", "We", "Th", "Fr", "Sa", "Su"].map((d) => `<span class="cal-wd" aria-hidden="true">${d}</span>`);
    for (let i = 0; i < weekday(start); i++) cells.push(`<span class="cal-pad"></span>`);
    let stored = 0;
    for (let d = 1; d <= days; d++) {
      const date = iso(start + (d - 1) * DAY_MS);
      const n = this.stored.get(date);
      const cur = date === this.current ? ` current" aria-current="date` : "";
      if (date < this.first || date > this.last) cells.push(`<span class="cal-day cal-out" title="${date}: no CRAN log for this day">${d}</span>`);
      else if (n === undefined) cells.push(`<a href="?date=${date}" class="cal-day cal-fetch${cur}" data-date="${date}" title="${date}: not stored, click to fetch it" aria-label="${d} ${MONTHS[m - 1]} ${y}, not stored, fetch it">${d}</a>`);
      else {
        stored++;
        cells.push(`<a href="?date=${date}" class="cal-day cal-stored${cur}" data-date="${date}" style="background:${shade(n)}" title="${date}: ${int(n)} downloads" aria-label="${d} ${MONTHS[m - 1]} ${y}, ${int(n)} downloads">${d}</a>`);
      }
    }
    box.innerHTML =
      `<div class="cal-month-head"><button type="button" data-step="-1" aria-label="previous month">‹</button>` +
      `<span>${MONTHS[m - 1]} ${y} · ${stored} of ${days} stored</span><button type="button" data-step="1" aria-label="next month">›</button></div>` +
      `<div class="cal-grid">${cells.join("")}</div>`;
  }
}
