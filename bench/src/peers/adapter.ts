import { setTimeout as sleep } from "node:timers/promises";
import type { LatencyOptions, LatencyResult } from "../latency.js";

/** What a peer adapter gets from the harness. */
export interface PeerContext {
  /** A fresh, empty Postgres database that belongs to this adapter for this run only. */
  readonly databaseUrl: string;
  /** Redis URL with a non-zero db index; shared, so key everything under `keyPrefix`. */
  readonly redisUrl: string;
  /** Unique per run and adapter; delete everything under it in `teardown()`. */
  readonly keyPrefix: string;
  /** How long each drained job's handler takes, ms (a timer); 0 returns at once. */
  readonly jobMs: number;
  /** Jobs a worker may hold beyond its free slots, for the peers that take it (`taskq-prefetch`). */
  readonly prefetch: number;
  /** Progress lines for a human (stderr); stdout is reserved for the report. */
  readonly log: (message: string) => void;
}

/** A drained job's work: `ctx.jobMs` on a timer, or nothing. */
export async function jobWork(ctx: PeerContext): Promise<void> {
  if (ctx.jobMs > 0) await sleep(ctx.jobMs);
}

/** The outcome of draining a backlog. */
export interface DrainResult {
  /** `jobs / (ms / 1000)`. */
  jobsPerSec: number;
  /** Milliseconds from starting the workers until the N-th completion was observed as recorded. */
  ms: number;
  /** What bounds this number, when it is the library's design rather than the machine. */
  note?: string;
  /** Polls the worker made and got answered (taskq: Claim message pairs); unknown for the peers. */
  polls?: number;
}

/**
 * The timed part of a drain. An adapter calls `open()` right before it starts its workers (it resolves
 * with the start time, once the harness has taken its CPU readings) and `close()` as soon as the last
 * completion is observed; the harness meters CPU in between. For warm-ups both just return the time.
 */
export interface DrainWindow {
  /** Takes the start readings; resolves with `performance.now()` after them. */
  open(): Promise<number>;
  /** Resolves with `performance.now()` as of the call, after taking the end readings. */
  close(): Promise<number>;
}

/** A window that meters nothing (warm-up drains). */
export const unmeteredWindow: DrainWindow = {
  open: async () => performance.now(),
  close: async () => performance.now(),
};

/** A shared service a peer stores its jobs in; the harness meters its CPU for that peer. */
export type Store = "postgres" | "redis";

/**
 * One queue system under test. The harness calls, in order: `setup()`, then any number of
 * `enqueue(n)` + `drain(n, c, window)` pairs (a warm-up, then timed runs, possibly interleaved with
 * other peers' runs), optionally `latency()`, and `teardown()` — the last one even when an earlier step
 * threw.
 *
 * A taskq adapter (`peers/taskq.ts`) implements the same shape: `setup()` starts a production-mode
 * gateway on the context's database and Redis, `drain()` runs the SDK `Worker` over gRPC.
 */
export interface PeerAdapter {
  /** Key of this peer in reports, e.g. `"bullmq"`, `"taskq"`. */
  readonly name: string;
  /** Services whose CPU counts for this peer: Postgres (its database's backends) and/or Redis. */
  readonly stores: readonly Store[];
  /**
   * Optional: processes the adapter runs besides this one, by label (taskq: `{ gateway: pid }`); each
   * gets its own CPU-per-job figure. Read after `setup()`.
   */
  children?(): Record<string, number>;
  /** Install schema/migrations, open connections. Not timed. */
  setup(): Promise<void>;
  /** Put `n` no-op jobs in the queue with the library's bulk insert. Not part of the drain time. */
  enqueue(n: number): Promise<void>;
  /**
   * Start workers with `concurrency` jobs in flight at most, run a no-op handler, and resolve once
   * exactly `n` jobs are complete *as the library records it* (not merely handlers returned); stop
   * the workers before resolving, outside the timed window. The clock (and the CPU meter) run from
   * `window.open()` to `window.close()`.
   */
  drain(n: number, concurrency: number, window: DrainWindow): Promise<DrainResult>;
  /**
   * Optional: enqueue at a steady rate while workers run and report enqueue→handler-start
   * percentiles. Implement with `measureLatency()` from `latency.ts`.
   */
  latency?(options: LatencyOptions): Promise<LatencyResult>;
  /** Close connections and remove what `setup()` created outside the throwaway database. */
  teardown(): Promise<void>;
}

/** How the drain scenario builds an adapter; one entry per peer in `peers/index.ts`. */
export interface PeerFactory {
  readonly name: string;
  create(ctx: PeerContext): PeerAdapter;
}

/**
 * Resolves with `performance.now()` at the moment `tick()` is called for the `n`-th time. Handlers call
 * `tick()` synchronously so the count costs nothing measurable.
 */
export class Countdown {
  readonly done: Promise<number>;
  #left: number;
  #resolve!: (at: number) => void;

  constructor(n: number) {
    this.#left = n;
    this.done = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    if (n <= 0) this.#resolve(performance.now());
  }

  tick(): void {
    this.#left -= 1;
    if (this.#left === 0) this.#resolve(performance.now());
  }
}

/**
 * Polls `check` every `intervalMs` until it returns true. Used where a library completes jobs
 * asynchronously after the handler returns and gives no event for the durable write.
 */
export async function waitUntil(
  check: () => Promise<boolean>,
  intervalMs = 1,
  timeoutMs = 600_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`waitUntil: gave up after ${timeoutMs} ms`);
    await sleep(intervalMs);
  }
}

/** Builds a `DrainResult` from a start time and the time the last completion was observed. */
export function drainResult(n: number, startedAt: number, doneAt: number): DrainResult {
  const ms = doneAt - startedAt;
  return { jobsPerSec: Math.round(n / (ms / 1000)), ms: Math.round(ms) };
}
