// One selected peer on its way through the drain scenario, and what every timed part of it shares: the
// admin connection that lists a database's backends and the redis-server pid, for the CPU meter.
import type pg from "pg";
import { CpuMeter, type CpuPerJob } from "./cpu-meter.js";
import type { LatencyReport, RunReport } from "./drain-report.js";
import type { ThrowawayDatabase } from "./infra.js";
import type { PeerAdapter, PeerFactory } from "./peers/adapter.js";
import type { ScenarioOptions } from "./scenario.js";

/** One selected peer through the scenario: its database, adapter, runs so far, or why it stopped. */
export interface Entrant {
  readonly factory: PeerFactory;
  db?: ThrowawayDatabase;
  adapter?: PeerAdapter;
  note?: string;
  readonly runs: RunReport[];
  /** `--latency`: by offered rate in jobs/s, once every round has run. */
  latency?: Record<string, LatencyReport>;
  error?: string;
}

/** What every timed run shares: the admin connection (backends) and the redis-server pid. */
export interface Meters {
  admin: pg.Client;
  redisPid: number | undefined;
}

export const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Runs `step` for a peer that has not failed yet; a failure is recorded and the others carry on. */
export async function attempt(
  e: Entrant,
  label: string,
  log: ScenarioOptions["log"],
  step: () => Promise<void>,
): Promise<void> {
  if (e.error !== undefined) return;
  try {
    await step();
  } catch (err) {
    e.error = `${label}: ${message(err)}`;
    log(`${e.factory.name}: FAILED ${e.error}`);
  }
}

/** "worker 12, gateway 14, postgres 16": a log line's CPU µs per job. */
export const cpuLine = (perJob: CpuPerJob): string =>
  Object.entries(perJob)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");

/** A CPU meter of the peer's processes: this one, its children, its database's backends, Redis. */
export function cpuMeter(e: Entrant, meters: Meters): CpuMeter {
  const adapter = e.adapter;
  if (!adapter || !e.db) throw new Error("not set up");
  return new CpuMeter({
    children: adapter.children?.() ?? {},
    postgres: adapter.stores.includes("postgres") ? { admin: meters.admin, database: e.db.name } : undefined,
    redisPid: adapter.stores.includes("redis") ? meters.redisPid : undefined,
  });
}
