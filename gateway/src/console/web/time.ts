// Every time the console shows is UTC on a 24-hour clock, with the zone said: the same instants the CLI
// prints as ISO 8601 (`2026-12-04T20:13:05.123Z`), readable beside them whatever the browser's zone.

const two = (n: number) => String(n).padStart(2, "0");

/** An instant (ms since the epoch, or RFC 3339) as "2026-12-04 20:13:05 UTC"; "" when unset or unreadable. */
export function dateTime(at: number | string | undefined): string {
  const d = new Date(typeof at === "string" ? Date.parse(at) : (at ?? Number.NaN));
  if (Number.isNaN(d.getTime())) return "";
  return `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())} ${clock(d.getTime())} UTC`;
}

/** The time of day of an instant, for "updated" stamps: "20:13:05 UTC". */
export function timeOfDay(at: number): string {
  return `${clock(at)} UTC`;
}

/** The UTC clock of an instant, "20:13:05", or "20:13" without seconds (a chart's time axis). */
export function clock(at: number, seconds = true): string {
  const d = new Date(at);
  const hm = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}`;
  return seconds ? `${hm}:${two(d.getUTCSeconds())}` : hm;
}
