import { setTimeout as sleep } from "node:timers/promises";

/** How to run the enqueue→handler-start sub-measure. */
export interface LatencyOptions {
  /** Jobs enqueued per second, spread evenly (default 1,000). */
  ratePerSec: number;
  /** Seconds whose jobs are recorded (default 10). */
  seconds: number;
  /** Seconds enqueued at the same rate first and not recorded: pools fill, JIT warms (default 1). */
  warmupSeconds: number;
  /** Worker concurrency, as in the drain. */
  concurrency: number;
}

export const defaultLatencyOptions: Omit<LatencyOptions, "concurrency"> = Object.freeze({
  ratePerSec: 1_000,
  seconds: 10,
  warmupSeconds: 1,
});

/** Percentiles of enqueue→handler-start, in milliseconds. */
export interface LatencyResult {
  /** Rate the enqueuer actually sustained over the whole run, jobs/s. */
  ratePerSec: number;
  /** Recorded jobs (warm-up excluded). */
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** What an adapter plugs into `measureLatency`. */
export interface LatencyHooks {
  /**
   * Start workers with the given concurrency. Each handler must call `onStart(stamp)` first thing,
   * with the stamp it found in its job's payload.
   */
  startWorkers(concurrency: number, onStart: (stamp: number) => void): Promise<void>;
  /** Enqueue one job per stamp (a number, ms on this process's `performance.now()` clock), in one batch. */
  enqueue(stamps: readonly number[]): Promise<void>;
  /** Stop the workers started above. */
  stopWorkers(): Promise<void>;
}

/** Nearest-rank percentile of an ascending array; `p` in (0, 100]. NaN when empty. */
export function percentile(sortedAsc: readonly number[], p: number): number {
  if (sortedAsc.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sortedAsc.length);
  return sortedAsc[Math.min(sortedAsc.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/** Ticks of the enqueue loop; each tick sends every job that has come due since the last one. */
const TICK_MS = 5;
/** Bound on concurrent enqueue calls, so a stalled producer shows up as latency, not as memory. */
const MAX_INFLIGHT_ENQUEUES = 64;

/**
 * Enqueues at a steady rate while workers run and returns enqueue→handler-start percentiles.
 *
 * Each job is stamped with its *scheduled* send time, not the time the enqueue call happened: if the
 * producer falls behind, that delay is charged to latency instead of silently thinning the load
 * (coordinated omission).
 */
export async function measureLatency(options: LatencyOptions, hooks: LatencyHooks): Promise<LatencyResult> {
  const { ratePerSec, seconds, warmupSeconds, concurrency } = options;
  const total = Math.round((warmupSeconds + seconds) * ratePerSec);
  const recordFromIndex = Math.round(warmupSeconds * ratePerSec);
  const intervalMs = 1000 / ratePerSec;
  const samples: number[] = [];
  const seen = new Set<number>();
  let recordFrom = Number.POSITIVE_INFINITY;

  await hooks.startWorkers(concurrency, (stamp) => {
    const now = performance.now();
    // At-least-once delivery may start a job twice; the first start is the one that counts.
    if (stamp < recordFrom || seen.has(stamp)) return;
    seen.add(stamp);
    samples.push(now - stamp);
  });

  const inflight = new Set<Promise<void>>();
  let failure: unknown;
  const t0 = performance.now();
  recordFrom = t0 + recordFromIndex * intervalMs;
  let sent = 0;
  try {
    while (sent < total && failure === undefined) {
      const due = Math.min(total, Math.floor((performance.now() - t0) / intervalMs) + 1);
      if (due > sent && inflight.size < MAX_INFLIGHT_ENQUEUES) {
        const stamps: number[] = [];
        for (let i = sent; i < due; i++) stamps.push(t0 + i * intervalMs);
        sent = due;
        const p: Promise<void> = hooks.enqueue(stamps).then(
          () => void inflight.delete(p),
          (err: unknown) => {
            failure ??= err;
            inflight.delete(p);
          },
        );
        inflight.add(p);
      }
      await sleep(TICK_MS);
    }
    const sentAllAt = performance.now();
    await Promise.all(inflight);
    if (failure !== undefined) throw failure;
    const expected = total - recordFromIndex;
    // Generous: a peer that polls every few seconds still finishes; a stuck one fails the run.
    const deadline = performance.now() + 30_000;
    while (samples.length < expected) {
      if (performance.now() > deadline) {
        throw new Error(`latency: only ${samples.length}/${expected} recorded jobs started within 30 s`);
      }
      await sleep(5);
    }
    samples.sort((a, b) => a - b);
    return {
      ratePerSec: Math.round(total / ((sentAllAt - t0) / 1000)),
      samples: samples.length,
      p50Ms: round2(percentile(samples, 50)),
      p99Ms: round2(percentile(samples, 99)),
      maxMs: round2(samples[samples.length - 1] ?? Number.NaN),
    };
  } finally {
    await Promise.allSettled(inflight);
    await hooks.stopWorkers();
  }
}
