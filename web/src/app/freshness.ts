// How fresh the store is, under the calendar: "newest day 2015-03-02, stored 3 min ago; source has
// up to 2015-03-02". /api/days is asked again every minute and when the window gets the focus (a
// 304 while nothing changed); when a new day was stored the calendar is reloaded, so a day the
// server's follower (`serve --follow`) stored shows up without a reload.
import { getDays } from "./api";
import type { DayList } from "./api";

/** How long before `now` the UTC time `iso` was, in words. */
export function ago(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** The line under the calendar. */
export function freshnessText(d: DayList, now = Date.now()): string {
  const newest = d.days.length ? d.days[d.days.length - 1].date : null;
  let text = newest ? `newest day ${newest}` : "no days stored yet";
  if (newest && d.ingested_at) text += `, stored ${ago(d.ingested_at, now)}`;
  const f = d.follow;
  if (f.on) {
    text += f.source_newest ? `; source has up to ${f.source_newest}` : "; following the source";
    if (f.last_error) text += ` (retrying: ${f.errors} error${f.errors === 1 ? "" : "s"} in a row)`;
  }
  return text;
}

/** Shows the line in `el` and keeps it current; `onNewDay` runs when the newest day changed. */
export function watchFreshness(el: HTMLElement, onNewDay: () => void, everyMs = 60_000): void {
  let seen: string | null = null;
  let last: DayList | null = null;
  const show = () => {
    if (!last) return;
    el.textContent = freshnessText(last);
    const f = last.follow;
    el.title = f.on && f.checked_at ? `source last checked ${ago(f.checked_at)} (${f.checked_at})` : "";
  };
  const refresh = async () => {
    try {
      last = await getDays();
    } catch {
      return;
    }
    const newest = last.days.length ? `${last.days[last.days.length - 1].date} ${last.ingested_at}` : "";
    if (seen !== null && newest !== seen) onNewDay();
    seen = newest;
    el.dataset.newest = last.days.length ? last.days[last.days.length - 1].date : "";
    show();
  };
  void refresh();
  setInterval(() => void refresh(), everyMs);
  window.addEventListener("focus", () => void refresh());
}
