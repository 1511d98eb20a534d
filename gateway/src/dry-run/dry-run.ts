import { InvalidArgumentError, NotFoundError } from "../errors.js";
import type { Db } from "../store/db.js";
import type { FlowLimitRow, QueueSettings, QueueStore } from "../store/queue-store.js";
import { type Comparison, compare } from "./compare.js";
import { dbNow, MAX_REPLAY_JOBS, readHistory } from "./history.js";
import type { ReplayLimits } from "./simulate.js";

/** A proposed limit change: the arguments of the verb that would make it. */
export type LimitChange =
  | { kind: "max_running"; queue: string; maxRunning: number | null }
  | { kind: "throttle"; queue: string; limit: number; periodMs: number }
  /** set_adaptive_concurrency's: a null min turns it off (max and target null too). */
  | {
      kind: "adaptive";
      queue: string;
      min: number | null;
      max: number | null;
      targetLatencyMs: number | null;
    }
  /** ensure_queue's profile: its max_running, claim_rate_per_minute and claim_burst are replayed. */
  | { kind: "profile"; queue: string; profile: Record<string, unknown> }
  | {
      kind: "flow_limit";
      /** The queue whose jobs are replayed (a flow key's limit spans queues; its history is per queue). */
      queue: string;
      flowKey: string;
      ratePerMinute: number | null;
      burst: number | null;
    };

/** How far back a dry run replays by default, and its bounds, seconds. */
export const WINDOW_SECONDS = { default: 3600, min: 60, max: 86_400 } as const;
/** A job counts as delayed when it starts at least this much later, ms: default and bounds. */
export const MIN_DELAY_MS = { default: 1000, min: 1, max: 86_400_000 } as const;

export interface DryRunOptions {
  windowSeconds?: number | undefined;
  minDelayMs?: number | undefined;
}

/** What a change would have done to the queue's last window, against its current limits. */
export interface DryRunReport extends Comparison {
  queue: string;
  /** The window replayed, ms since the epoch (shorter than asked when `truncated`). */
  fromMs: number;
  toMs: number;
  windowSeconds: number;
  minDelayMs: number;
  /** Jobs replayed, and whether the window held more than a dry run reads (MAX_REPLAY_JOBS). */
  jobs: number;
  truncated: boolean;
  maxJobs: number;
  /** The workers' concurrency the replays assume; null: only the limits bound it. */
  workers: number | null;
  currentLimits: ReplayLimits;
  proposedLimits: ReplayLimits;
}

export interface DryRunDeps {
  db: Db;
  queues: QueueStore;
  /** Postgres's time now, ms (default: asked of it); the window ends there. */
  now?: () => Promise<number>;
  maxJobs?: number;
}

/**
 * Replays the queue's last window under its current limits and under the ones `change` would set,
 * and reports what the change would have done. The change is validated by its own verb, run in a
 * transaction that is rolled back (QueueStore.rehearse), so a value the verb refuses is refused here
 * with the same error, and nothing is written: no settings, no audit row, no limiter state.
 */
export async function dryRun(
  d: DryRunDeps,
  change: LimitChange,
  actor: string,
  opts: DryRunOptions = {},
): Promise<DryRunReport> {
  const windowSeconds = option("window_seconds", opts.windowSeconds, WINDOW_SECONDS);
  const minDelayMs = option("min_delay_ms", opts.minDelayMs, MIN_DELAY_MS);
  const { before, after, flowBefore, flowAfter } = await d.queues.rehearse(async (s) => {
    // Read first (a queue never seen has every gate off), then let the verb judge the change.
    const before = await s.queueGet(change.queue).catch((err) => {
      if (err instanceof NotFoundError) return null;
      throw err;
    });
    const flowBefore = await s.flowLimitsList();
    let after = before;
    let flowAfter = flowBefore;
    switch (change.kind) {
      case "max_running":
        after = await s.queueSetConcurrency(change.queue, change.maxRunning, actor);
        break;
      case "throttle":
        after = await s.queueSetThrottle(change.queue, change.limit, change.periodMs, actor);
        break;
      case "profile":
        after = await s.queueEnsure(change.queue, change.profile, actor);
        break;
      case "adaptive":
        after = await s.queueSetAdaptive(change.queue, change.min, change.max, change.targetLatencyMs, actor);
        break;
      case "flow_limit": {
        const limit = await s.flowLimitSet(change.flowKey, change.ratePerMinute, change.burst, actor);
        flowAfter = [
          ...flowBefore.filter((l) => l.flowKey !== change.flowKey),
          ...(limit
            ? [{ flowKey: change.flowKey, ratePerMinute: limit.rate_per_minute, burst: limit.burst }]
            : []),
        ];
        // Its history is the queue's: one never seen has none to replay.
        if (before === null) await s.queueGet(change.queue);
        break;
      }
    }
    return { before, after, flowBefore, flowAfter };
  });

  const toMs = await (d.now ?? (() => dbNow(d.db)))();
  const maxJobs = d.maxJobs ?? MAX_REPLAY_JOBS;
  const history = await readHistory(d.db, {
    queue: change.queue,
    fromMs: toMs - windowSeconds * 1000,
    toMs,
    maxJobs,
  });
  // The workers ran at most peakRunning at once. Where a cap held them there, they might have run
  // more: only the limits bound the replay then.
  const capped = before?.max_running != null && history.peakRunning >= before.max_running;
  const workers = capped || history.peakRunning === 0 ? null : history.peakRunning;
  const currentLimits = limitsOf(before, flowBefore, workers);
  const proposedLimits = limitsOf(after, flowAfter, workers);
  return {
    queue: change.queue,
    fromMs: history.fromMs,
    toMs: history.toMs,
    windowSeconds,
    minDelayMs,
    jobs: history.input.jobs.length,
    truncated: history.truncated,
    maxJobs,
    workers,
    currentLimits,
    proposedLimits,
    ...compare(history.input, currentLimits, proposedLimits, { minDelayMs, endMs: history.toMs }),
  };
}

function option(
  field: string,
  v: number | undefined,
  range: { default: number; min: number; max: number },
): number {
  if (v === undefined) return range.default;
  if (!Number.isInteger(v) || v < range.min || v > range.max)
    throw new InvalidArgumentError(field, `must be from ${range.min} to ${range.max} (got ${v})`);
  return v;
}

/** The gates a replay applies, from a queue's settings (null: never seen, every gate off). */
export function limitsOf(
  s: QueueSettings | null,
  flowLimits: readonly FlowLimitRow[],
  workers: number | null,
): ReplayLimits {
  return {
    maxRunning: s?.max_running ?? null,
    throttle: s?.throttle ? { limit: s.throttle.limit, periodMs: s.throttle.period_ms } : null,
    claimRate:
      s?.claim_rate_per_minute != null
        ? { ratePerMinute: s.claim_rate_per_minute, burst: s.claim_burst ?? 1 }
        : null,
    flowLimits: new Map(
      flowLimits.map((l) => [l.flowKey, { ratePerMinute: l.ratePerMinute, burst: l.burst }]),
    ),
    workers,
    adaptive: s?.adaptive
      ? { min: s.adaptive.min, max: s.adaptive.max, targetMs: s.adaptive.target_latency_ms }
      : null,
  };
}
