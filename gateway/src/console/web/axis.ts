import { clock } from "./time.js";

/** A labelled tick on a chart's axis. */
export interface Tick {
  /** ms since the epoch on the time axis; a value on the value axis. */
  at: number;
  label: string;
}

/** Steps the time axis may take: round clock intervals, so its ticks fall on :00, :05, :10, … */
const TIME_STEPS_MS = [10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600].map((s) => s * 1000);

/**
 * Ticks on the round clock times within [from, to], at most `most` of them, labelled in UTC like every
 * time in the console (the chart says so): HH:MM, or HH:MM:SS when the step is under a minute.
 */
export function timeTicks(from: number, to: number, most = 5): Tick[] {
  const span = Math.max(1, to - from);
  const step = TIME_STEPS_MS.find((s) => span / s <= most) ?? span;
  const ticks: Tick[] = [];
  for (let at = Math.ceil(from / step) * step; at <= to; at += step)
    ticks.push({ at, label: clock(at, step < 60_000) });
  return ticks;
}

/** The value axis: 0 up to a round top at or above `max`, in at most four round steps. */
export function valueTicks(max: number): Tick[] {
  const step = niceStep(max);
  const steps = Math.max(1, Math.ceil(max / step - 1e-9));
  return Array.from({ length: steps + 1 }, (_, i) => ({ at: i * step, label: short(i * step) }));
}

/** The smallest of 1, 2 or 5 times a power of ten that reaches `max` in four steps or fewer. */
function niceStep(max: number): number {
  const base = 10 ** Math.floor(Math.log10(Math.max(max, Number.MIN_VALUE) / 4));
  for (const m of [1, 2, 5, 10]) if (max / (m * base) <= 4 + 1e-9) return m * base;
  return 10 * base;
}

const COMPACT = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 2 });

/** 20000 → "20K", 0.5 → "0.5": short enough for the axis' narrow margin. */
function short(v: number): string {
  return COMPACT.format(v);
}
