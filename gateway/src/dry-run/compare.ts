import { type Replay, type ReplayInput, type ReplayLimits, replay } from "./simulate.js";

/** One replay's figures, as a report shows them. */
export interface ReplaySummary {
  /** Most jobs waiting at once, and when (ms since the epoch; null with no job). */
  peakBacklog: number;
  peakBacklogAtMs: number | null;
  /** Average and longest wait from ready to start, ms. */
  meanWaitMs: number;
  maxWaitMs: number;
  /** Jobs that would not have started by the window's end. */
  notStartedByEnd: number;
}

/** What the proposed limits would have changed against the current ones, job by job. */
export interface Comparison {
  current: ReplaySummary;
  proposed: ReplaySummary;
  /** Jobs that start at least `minDelayMs` later under the proposed limits. */
  delayed: number;
  /** Jobs that start at least `minDelayMs` sooner. */
  sooner: number;
  /** The most a job starts later under the proposed limits, ms (0 when none does). */
  longestExtraWaitMs: number;
}

/**
 * Replays the same jobs under the current and the proposed limits and compares each job's start: what
 * the model gets wrong about the real claims (poll round trips, the exact moment a worker asks) it
 * gets wrong in both, so the difference is the limit's.
 */
export function compare(
  input: ReplayInput,
  current: ReplayLimits,
  proposed: ReplayLimits,
  opts: { minDelayMs: number; endMs: number },
): Comparison {
  const now = replay(input, current);
  const then = replay(input, proposed);
  let delayed = 0;
  let sooner = 0;
  let longest = 0;
  for (let i = 0; i < input.jobs.length; i++) {
    // A job that never starts (no places at all) waits forever.
    const extra = nanToInf(then.startMs[i] as number) - nanToInf(now.startMs[i] as number);
    if (extra >= opts.minDelayMs) delayed++;
    else if (-extra >= opts.minDelayMs) sooner++;
    if (extra > longest) longest = extra;
  }
  return {
    current: summary(input, now, opts.endMs),
    proposed: summary(input, then, opts.endMs),
    delayed,
    sooner,
    longestExtraWaitMs: Number.isFinite(longest) ? longest : Number.MAX_SAFE_INTEGER,
  };
}

function nanToInf(v: number): number {
  return Number.isNaN(v) ? Number.POSITIVE_INFINITY : v;
}

function summary(input: ReplayInput, r: Replay, endMs: number): ReplaySummary {
  let total = 0;
  let max = 0;
  let late = 0;
  let started = 0;
  input.jobs.forEach((job, i) => {
    const start = r.startMs[i] as number;
    if (Number.isNaN(start) || start >= endMs) late++;
    if (Number.isNaN(start)) return;
    const wait = start - job.readyMs;
    total += wait;
    started++;
    if (wait > max) max = wait;
  });
  return {
    peakBacklog: r.peakBacklog,
    peakBacklogAtMs: r.peakBacklogAtMs,
    meanWaitMs: started > 0 ? total / started : 0,
    maxWaitMs: max,
    notStartedByEnd: late,
  };
}
