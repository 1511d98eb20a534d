import type { Verdict } from "../gates/verdict.js";
import type { Logger } from "../log.js";
import type { WorkerReport, WorkerStore } from "../store/worker-store.js";

/** What one Claim stream (or one ClaimOnce caller) told this gateway, kept in memory. */
interface StreamSummary {
  workerId: string;
  queues: string[];
  maxJobs: number;
  concurrency: number | null;
  prefetch: number | null;
  lastPollMs: number;
  /** A poll of it is being answered (a long poll waiting for work): it is polling now. */
  polling: boolean;
  /** Throttled verdicts answered to it, oldest first: when, and why. */
  verdicts: { atMs: number; reason: string }[];
}

/** What a poll says of its worker. */
export interface PollFacts {
  workerId: string;
  queues: string[];
  maxJobs: number;
  concurrency?: number | null;
  prefetch?: number | null;
}

/** Verdicts are counted over this window (the workers list's "verdicts in the last minute"). */
const VERDICT_WINDOW_MS = 60_000;
/** Most verdicts kept per stream: a worker sleeps retry_after after each, so this is rarely reached. */
const VERDICTS_KEPT = 1000;
/** A ClaimOnce caller has no stream that closes: it counts as connected this long after its last poll. */
const ONCE_KEPT_MS = 60_000;

/**
 * This gateway's summary of the workers polling it, written to taskq.workers in one statement every
 * `flushMs` (a poll costs a map update, never a write). Each row lapses after 3 flushes: a worker whose
 * stream closes is gone at the next flush, and a gateway that died leaves rows every reader ignores
 * once they lapse (the next flush of any gateway prunes them).
 */
export class WorkerRecords {
  /** Open Claim streams (by a key object per stream) and ClaimOnce callers (by `once:<worker id>`). */
  readonly #streams = new Map<object | string, StreamSummary>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: WorkerStore,
    private readonly gatewayId: string,
    readonly flushMs: number,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  /** How long a row outlives its last flush: three flushes, so one late or failed flush loses nothing. */
  get ttlMs(): number {
    return 3 * this.flushMs;
  }

  /** A poll arrived on `stream` (a ClaimOnce poll: pass no stream). */
  polled(stream: object | undefined, p: PollFacts): void {
    const key = stream ?? `once:${p.workerId}`;
    const now = this.clock();
    const s = this.#streams.get(key);
    if (!s) {
      this.#streams.set(key, {
        workerId: p.workerId,
        queues: p.queues,
        maxJobs: p.maxJobs,
        concurrency: p.concurrency ?? null,
        prefetch: p.prefetch ?? null,
        lastPollMs: now,
        polling: true,
        verdicts: [],
      });
      return;
    }
    // Every poll of a stream: updated in place, nothing allocated.
    s.workerId = p.workerId;
    s.queues = p.queues;
    s.maxJobs = p.maxJobs;
    s.concurrency = p.concurrency ?? null;
    s.prefetch = p.prefetch ?? null;
    s.lastPollMs = now;
    s.polling = true;
  }

  /** The poll on `stream` was answered with `verdicts`. */
  answered(stream: object | undefined, workerId: string, verdicts: readonly Verdict[]): void {
    const s = this.#streams.get(stream ?? `once:${workerId}`);
    if (!s) return;
    s.polling = false;
    if (verdicts.length === 0) return;
    const now = this.clock();
    for (const v of verdicts) s.verdicts.push({ atMs: now, reason: v.reason });
    if (s.verdicts.length > VERDICTS_KEPT) s.verdicts.splice(0, s.verdicts.length - VERDICTS_KEPT);
  }

  /** The stream ended: its worker is gone at the next flush. */
  closed(stream: object): void {
    this.#streams.delete(stream);
  }

  /** The workers as this gateway sees them now, one per worker id. */
  reports(): WorkerReport[] {
    const now = this.clock();
    const byWorker = new Map<string, WorkerReport>();
    for (const [key, s] of this.#streams) {
      if (typeof key === "string" && now - s.lastPollMs > ONCE_KEPT_MS) {
        this.#streams.delete(key);
        continue;
      }
      if (s.polling) s.lastPollMs = now;
      const recent = s.verdicts.findIndex((v) => now - v.atMs < VERDICT_WINDOW_MS);
      s.verdicts.splice(0, recent === -1 ? s.verdicts.length : recent);
      const r = byWorker.get(s.workerId);
      if (!r) {
        byWorker.set(s.workerId, {
          worker_id: s.workerId,
          queues: [...s.queues],
          streams: 1,
          max_jobs: s.polling ? s.maxJobs : 0,
          concurrency: s.concurrency,
          prefetch: s.prefetch,
          last_poll_ms: s.lastPollMs,
          verdicts: countByReason(s.verdicts, {}),
        });
        continue;
      }
      // One worker id on several streams: the union of their queues, their sums, the latest poll.
      r.queues = [...new Set([...r.queues, ...s.queues])];
      r.streams++;
      r.max_jobs += s.polling ? s.maxJobs : 0;
      r.concurrency = sumOrNull(r.concurrency, s.concurrency);
      r.prefetch = sumOrNull(r.prefetch, s.prefetch);
      r.last_poll_ms = Math.max(r.last_poll_ms, s.lastPollMs);
      countByReason(s.verdicts, r.verdicts);
    }
    return [...byWorker.values()];
  }

  start(): void {
    this.#timer = setInterval(() => void this.flush(), this.flushMs);
    this.#timer.unref();
  }

  /** Writes this gateway's workers now (runOnce); one flush at a time. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      try {
        await this.store.workersFlush(this.gatewayId, this.reports(), this.ttlMs);
      } catch (err) {
        // The rows stay as they were until they lapse: the next flush writes what is true then.
        this.log.warn({ err: (err as Error).message }, "could not record the connected workers; will retry");
      }
    });
    return this.#flushing;
  }

  /** Stops flushing and removes this gateway's rows (its streams are closed by then). */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#streams.clear();
    await this.flush();
  }
}

function countByReason(
  verdicts: readonly { reason: string }[],
  into: Record<string, number>,
): Record<string, number> {
  for (const v of verdicts) into[v.reason] = (into[v.reason] ?? 0) + 1;
  return into;
}

function sumOrNull(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : a + b;
}
