// The adaptive limit's law for a replay: taskq.adaptive_step, adaptive_interval, adaptive_unread and
// adaptive_due, the same rules on the replay's clock. adaptive-law.test.ts holds the two to the same
// answers, case by case.

/** An adaptive limit's bounds and target, as set_adaptive_concurrency takes them. */
export interface AdaptiveBounds {
  min: number;
  max: number;
  targetMs: number;
}

/** How often the controller gets a turn (the maintenance loop's adaptive turn), ms. */
export const TURN_MS = 250;

/** taskq.adaptive_interval: between two decisions, ms. */
export function intervalMs(targetMs: number, slowStart: boolean): number {
  const steady = Math.min(60_000, Math.max(1000, targetMs));
  return slowStart ? Math.min(Math.max(250, 2 * targetMs), steady) : steady;
}

/** taskq.adaptive_unread: the first part of an interval, whose settles are not read, ms. */
export const unreadMs = (targetMs: number, slowStart: boolean) =>
  Math.min(targetMs, intervalMs(targetMs, slowStart) / 2);

/** taskq.adaptive_step's decision, without its reason. */
export function adaptiveStep(
  limit: number,
  b: AdaptiveBounds,
  slowStart: boolean,
  settles: number,
  failures: number,
  avgMs: number,
  running: number,
): { limit: number; slowStart: boolean } {
  const l = Math.min(b.max, Math.max(b.min, limit));
  if (settles === 0) return { limit: l, slowStart };
  let factor: number | null = null;
  if (failures / settles >= 0.05) factor = 0.7;
  else if (avgMs > b.targetMs) factor = Math.max(0.7, Math.min(0.9, b.targetMs / avgMs));
  if (factor !== null) {
    if (l <= b.min) return { limit: l, slowStart };
    return { limit: Math.max(b.min, Math.min(l - 1, Math.floor(l * factor))), slowStart: false };
  }
  if (avgMs > b.targetMs * 0.95 || running < Math.ceil(l * 0.8) || l >= b.max) return { limit: l, slowStart };
  const grown = slowStart ? Math.max(l + 1, Math.ceil(l * 1.25)) : l + 1;
  return { limit: Math.min(b.max, grown), slowStart };
}

/**
 * One adaptive limit through a replay, started at min in slow start, as turning it on does. Settles come
 * in time order, each no later than the next turn; a decision reads those past its interval's first part.
 */
export class AdaptiveLimit {
  limit: number;
  private slowStart = true;
  private decidedAt: number;
  private read = { settles: 0, failures: 0, ms: 0 };

  constructor(
    private readonly b: AdaptiveBounds,
    startMs: number,
  ) {
    this.limit = b.min;
    this.decidedAt = startMs;
  }

  settle(at: number, ms: number, failed: boolean): void {
    if (at <= this.decidedAt + unreadMs(this.b.targetMs, this.slowStart)) return;
    this.read.settles++;
    if (failed) this.read.failures++;
    this.read.ms += ms;
  }

  /** The controller's turn at `t`, with `running` jobs running. */
  turn(t: number, running: number): void {
    const { settles, failures, ms } = this.read;
    const due =
      t >= this.decidedAt + intervalMs(this.b.targetMs, this.slowStart) ||
      (failures >= 3 && failures >= 0.05 * settles);
    if (!due) return;
    const next = adaptiveStep(
      this.limit,
      this.b,
      this.slowStart,
      settles,
      failures,
      ms / Math.max(1, settles),
      running,
    );
    this.limit = next.limit;
    this.slowStart = next.slowStart;
    this.decidedAt = t;
    this.read = { settles: 0, failures: 0, ms: 0 };
  }
}
