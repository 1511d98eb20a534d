/** Protobuf JSON of a QueueActivityMinute (uint64 as strings). */
export interface ActivityMinuteJson {
  minute?: string;
  claimed?: string;
  succeeded?: string;
  failed?: string;
  cancelled?: string;
  avgRunMs?: number;
  maxRunMs?: number;
  throttled?: Record<string, string>;
}

type Points = [number, number | null][];

/** The Queue page's activity charts, one series per line, x at each minute's start. */
export interface ActivitySeries {
  claimsPerSecond: Points;
  succeeded: Points;
  failed: Points;
  cancelled: Points;
  /** Null where no job finished that minute (a gap, not a zero). */
  avgRunMs: Points;
  maxRunMs: Points;
  /** By reason, reasons in order of their total, largest first. */
  throttled: [string, Points][];
  /**
   * The start of the last minute that has ended (the charts' headline figures: the current minute is
   * still filling, so it reads low); null when the minutes hold none.
   */
  lastFullMinute: number | null;
}

/**
 * Turns QueueActivity's minutes (oldest first, the current one partial) into chart series. Claims per
 * second divide a minute's claims by its length, or by the seconds elapsed of the current minute.
 */
export function activitySeries(minutes: readonly ActivityMinuteJson[], now: number): ActivitySeries {
  const rows = minutes.map((m) => ({ at: Date.parse(m.minute ?? ""), m }));
  const n = (s: string | undefined) => Number(s ?? 0);
  const seconds = (at: number) => Math.max(1, Math.min(60, (now - at) / 1000));
  const reasons = new Map<string, number>();
  for (const { m } of rows)
    for (const [reason, c] of Object.entries(m.throttled ?? {}))
      reasons.set(reason, (reasons.get(reason) ?? 0) + Number(c));
  return {
    claimsPerSecond: rows.map(({ at, m }) => [at, round(n(m.claimed) / seconds(at))]),
    succeeded: rows.map(({ at, m }) => [at, n(m.succeeded)]),
    failed: rows.map(({ at, m }) => [at, n(m.failed)]),
    cancelled: rows.map(({ at, m }) => [at, n(m.cancelled)]),
    avgRunMs: rows.map(({ at, m }) => [at, m.avgRunMs ?? null]),
    maxRunMs: rows.map(({ at, m }) => [at, m.maxRunMs ?? null]),
    throttled: [...reasons.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([reason]) => [reason, rows.map(({ at, m }) => [at, Number(m.throttled?.[reason] ?? 0)])]),
    lastFullMinute: rows.findLast(({ at }) => at + 60_000 <= now)?.at ?? null,
  };
}

function round(v: number): number {
  return Math.round(v * 100) / 100;
}
