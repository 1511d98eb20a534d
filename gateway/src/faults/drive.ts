// Steps every scenario takes: enqueue a known set of jobs, wait for the queue to drain, and judge the
// outcome with the oracle, printing the figure the scenario is measured by.
import { randomBytes } from "node:crypto";
import { Client, type EnqueueSpec } from "@taskq/sdk";
import { checkTotalQueue, describeReport, type OracleReport } from "./oracle.js";
import { countByState, readStoredJobs } from "./stored-jobs.js";
import { FAULT_TOKEN } from "./token.js";
import { type LoggingWorkerOptions, startWorkerChild, type WorkerChild } from "./worker-child.js";

/** A queue name no other test uses (limiter keys are per queue, on the shared Redis). */
export function scenarioQueue(name: string): string {
  return `faults-${name}-${randomBytes(4).toString("hex")}`;
}

/**
 * Enqueues `count` jobs in batches through the gateway at `grpcUrl` (each with `extra`, e.g. a flow
 * key); returns the acknowledged ids.
 */
export async function enqueueJobs(
  grpcUrl: string,
  queue: string,
  count: number,
  extra: Partial<EnqueueSpec> = {},
): Promise<string[]> {
  const client = new Client({ baseUrl: grpcUrl, token: FAULT_TOKEN });
  const ids: string[] = [];
  try {
    for (let start = 0; start < count; start += 500) {
      const specs = Array.from({ length: Math.min(500, count - start) }, (_, i) => ({
        queue,
        payload: { n: start + i },
        maxAttempts: 100,
        ...extra,
      }));
      for (const r of await client.enqueueBatch(specs)) ids.push(r.jobId);
    }
  } finally {
    client.close();
  }
  return ids;
}

/** Polls the store until every job of `queue` succeeded, or `timeoutMs` passed; returns the last counts. */
export async function waitForDrain(
  databaseUrl: string,
  queue: string,
  total: number,
  timeoutMs: number,
): Promise<Record<string, number>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await countByState(databaseUrl, queue);
    if ((counts.succeeded ?? 0) >= total || Date.now() > deadline) return counts;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Runs the oracle over what the workers logged and the store holds, and prints its figure. */
export async function judge(
  title: string,
  databaseUrl: string,
  queue: string,
  enqueued: readonly string[],
  workers: readonly WorkerChild[],
): Promise<OracleReport> {
  const report = checkTotalQueue({
    enqueued,
    events: workers.flatMap((w) => w.events),
    stored: await readStoredJobs(databaseUrl, queue),
  });
  console.log(`[faults] ${title}: ${describeReport(report)}`);
  return report;
}

/** Starts `processes` logging-worker processes of `perProcess` workers each, named p0, p1, …. */
export async function startWorkerFleet(
  processes: number,
  opts: Omit<LoggingWorkerOptions, "name">,
): Promise<WorkerChild[]> {
  return Promise.all(
    Array.from({ length: processes }, (_, i) => startWorkerChild({ ...opts, name: `p${i}` })),
  );
}

/** Completed handler runs so far, over `workers`. */
export function completedRuns(workers: readonly WorkerChild[]): number {
  return workers.reduce((n, w) => n + w.events.filter((e) => e.kind === "completed").length, 0);
}

/** Waits until `workers` have completed `count` runs (or 60 s passed). */
export async function untilCompleted(workers: readonly WorkerChild[], count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (completedRuns(workers) < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}
