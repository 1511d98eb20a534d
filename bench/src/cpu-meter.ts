import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import type { DrainWindow } from "./peers/adapter.js";
import { procStat } from "./proc-stat.js";

/** How often the Postgres backends of the measured database are listed during a drain. */
const BACKEND_SAMPLE_MS = 200;

/**
 * CPU per drained job in µs, per process, over the timed drain. `worker` is this bench process (where
 * the SDK worker or the peer's worker runs); other keys are the adapter's named children (taskq:
 * `gateway`), `postgres` (the measured database's backends) and `redis` (the redis-server process).
 */
export interface CpuPerJob {
  worker: number;
  postgres?: number;
  redis?: number;
  [process: string]: number | undefined;
}

/** Which processes to meter besides this one. */
export interface CpuSources {
  /** Child processes the adapter runs, by label (`PeerAdapter.children()`). */
  children: Record<string, number>;
  /** The peer's database: its backends are found through `admin` in `pg_stat_activity`. */
  postgres?: { admin: pg.Client; database: string };
  /** Pid of redis-server (from `INFO server`), for peers that use Redis. */
  redisPid?: number;
}

/** CPU seconds of a process whose executable is `comm`; undefined when gone or something else. */
function cpuOf(pid: number, comm?: string): number | undefined {
  const stat = procStat(pid);
  return stat && (comm === undefined || stat.comm === comm) ? stat.cpuSeconds : undefined;
}

/**
 * The Postgres backends of one database, listed every 200 ms: each pid's CPU delta from when it was
 * first seen (0 if it connected during the drain) to when it was last seen. A backend that lives less
 * than one sample interval is missed, and so is a backend's CPU after its last sample.
 */
class BackendSampler {
  readonly #seen = new Map<number, { first: number; last: number }>();
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #error: unknown;

  constructor(readonly source: NonNullable<CpuSources["postgres"]>) {}

  async #sample(baseline: boolean): Promise<void> {
    const { rows } = await this.source.admin.query<{ pid: number }>(
      "select pid from pg_stat_activity where datname = $1",
      [this.source.database],
    );
    for (const { pid } of rows) {
      const cpu = cpuOf(pid, "postgres");
      if (cpu === undefined) continue;
      const entry = this.#seen.get(pid);
      if (entry) entry.last = cpu;
      else this.#seen.set(pid, { first: baseline ? cpu : 0, last: cpu });
    }
  }

  async start(): Promise<void> {
    await this.#sample(true);
    this.#loop = (async () => {
      while (!this.#stop.signal.aborted) {
        await sleep(BACKEND_SAMPLE_MS, undefined, { signal: this.#stop.signal }).catch(() => {});
        if (!this.#stop.signal.aborted) await this.#sample(false);
      }
    })().catch((err: unknown) => {
      // Held for stop(): an unobserved rejection here would end the process.
      this.#error = err;
    });
  }

  /** Ends the sampling loop; safe to call more than once or before `start()`. */
  async cancel(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  /** Stops sampling, takes the last sample and returns the CPU seconds of every backend seen. */
  async stop(): Promise<number> {
    await this.cancel();
    if (this.#error !== undefined) throw this.#error;
    await this.#sample(false);
    let sum = 0;
    for (const { first, last } of this.#seen.values()) sum += last - first;
    return sum;
  }
}

/**
 * Meters CPU between `open()` and `close()` of one timed drain; the adapter calls both around its
 * clock (see `DrainWindow`), then the harness reads `perJob(n)`.
 */
export class CpuMeter implements DrainWindow {
  readonly #sources: CpuSources;
  readonly #backends: BackendSampler | undefined;
  #start:
    | { bench: NodeJS.CpuUsage; children: Record<string, number | undefined>; redis?: number }
    | undefined;
  #seconds: Record<string, number> | undefined;

  constructor(sources: CpuSources) {
    this.#sources = sources;
    this.#backends = sources.postgres && new BackendSampler(sources.postgres);
  }

  #others(): { children: Record<string, number | undefined>; redis?: number } {
    const { children, redisPid } = this.#sources;
    return {
      children: Object.fromEntries(Object.entries(children).map(([label, pid]) => [label, cpuOf(pid)])),
      redis: redisPid === undefined ? undefined : cpuOf(redisPid, "redis-server"),
    };
  }

  async open(): Promise<number> {
    await this.#backends?.start();
    this.#start = { ...this.#others(), bench: process.cpuUsage() };
    return performance.now();
  }

  async close(): Promise<number> {
    const at = performance.now();
    const start = this.#start;
    if (!start) throw new Error("CpuMeter: close() before open()");
    const bench = process.cpuUsage(start.bench);
    const end = this.#others();
    const seconds: Record<string, number> = { worker: (bench.user + bench.system) / 1e6 };
    for (const [label, cpu] of Object.entries(end.children)) {
      const before = start.children[label];
      if (cpu !== undefined && before !== undefined) seconds[label] = cpu - before;
    }
    if (this.#backends) seconds.postgres = await this.#backends.stop();
    if (end.redis !== undefined && start.redis !== undefined) seconds.redis = end.redis - start.redis;
    this.#seconds = seconds;
    return at;
  }

  /** Stops background sampling if the drain threw before `close()`; harmless after it. */
  async cancel(): Promise<void> {
    await this.#backends?.cancel();
  }

  /** CPU per job in whole µs for each metered process; call after `close()`. */
  perJob(n: number): CpuPerJob {
    if (!this.#seconds) throw new Error("CpuMeter: perJob() before close()");
    const us = (s: number) => Math.round((s * 1e6) / n);
    const out: CpuPerJob = { worker: us(this.#seconds.worker ?? 0) };
    for (const [label, s] of Object.entries(this.#seconds)) out[label] = us(s);
    return out;
  }
}
