// A logging-worker process (fixtures/logging-worker.ts) seen from the scenario: its (job, attempt)
// events for the oracle, the SDK's warnings, and the workers' snapshots once stopped.
import { fileURLToPath } from "node:url";
import type { WorkerSnapshot } from "@taskq/sdk";
import { spawnTs, type TsChild } from "./child.js";
import type { WorkerEvent } from "./oracle.js";
import { FAULT_TOKEN } from "./token.js";

const ENTRY = fileURLToPath(new URL("./fixtures/logging-worker.ts", import.meta.url));

/** What the logging worker process runs; passed to it as JSON. */
export interface LoggingWorkerOptions {
  /** Name of the process; worker i is `<name>.<i>`. */
  name: string;
  /** Gateway gRPC URLs; worker i connects to urls[i % urls.length]. */
  urls: string[];
  queue: string;
  /** SDK Workers in this process, each with its own connection. */
  workers: number;
  /** Job slots per worker. */
  concurrency: number;
  /** Lease to ask for, ms. */
  leaseMs: number;
  /** Fixed heartbeat interval, ms; unset: the SDK's (a third of the lease). */
  heartbeatIntervalMs?: number | undefined;
  /** Each handler works a uniform random time in [min, max] ms. */
  workMs: [number, number];
}

export interface SdkLogLine {
  worker: string;
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

export interface WorkerChild {
  readonly child: TsChild;
  /** claimed / extended / completed, in the order written. */
  readonly events: WorkerEvent[];
  readonly aborted: { job: string; attempt: number; reason: string }[];
  readonly sdkLogs: SdkLogLine[];
  /** Filled by `stop()`: each worker's final snapshot. */
  readonly snapshots: Map<string, WorkerSnapshot>;
  /** Stops the workers (grace 0) and waits for their snapshots and the exit. */
  stop(): Promise<void>;
}

/** Starts a logging worker process and resolves once all its workers have started. */
export async function startWorkerChild(opts: LoggingWorkerOptions): Promise<WorkerChild> {
  const events: WorkerEvent[] = [];
  const aborted: WorkerChild["aborted"] = [];
  const sdkLogs: SdkLogLine[] = [];
  const snapshots = new Map<string, WorkerSnapshot>();
  let markReady: () => void = () => {};
  const ready = new Promise<void>((r) => {
    markReady = r;
  });
  const onLine = (line: string): boolean => {
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(line);
    } catch {
      return false;
    }
    if (e.kind === "claimed" || e.kind === "extended" || e.kind === "completed")
      events.push(e as unknown as WorkerEvent);
    else if (e.kind === "aborted") aborted.push(e as unknown as WorkerChild["aborted"][number]);
    else if (e.kind === "sdk") sdkLogs.push(e as unknown as SdkLogLine);
    else if (e.kind === "snapshot") snapshots.set(e.worker as string, e.snapshot as WorkerSnapshot);
    else if (e.kind === "ready") markReady();
    else return false;
    return true;
  };
  const child = spawnTs(ENTRY, [JSON.stringify(opts)], { TASKQ_FAULT_TOKEN: FAULT_TOKEN }, onLine);
  const exitedFirst = await Promise.race([ready.then(() => false), child.exited.then(() => true)]);
  if (exitedFirst) throw new Error(`worker ${opts.name} exited before ready:\n${child.output()}`);
  return { child, events, aborted, sdkLogs, snapshots, stop: () => child.stop() };
}
