// Steps every scenario takes: enqueue a known set of jobs, wait for the queue to drain, and judge the
// outcome with the oracle, printing the figure the scenario is measured by.
import { randomBytes } from "node:crypto";
import { Client } from "@taskq/sdk";
import { checkTotalQueue, describeReport, type OracleReport } from "./oracle.js";
import { countByState, readStoredJobs } from "./stored-jobs.js";
import { FAULT_TOKEN } from "./token.js";
import type { WorkerChild } from "./worker-child.js";

/** A queue name no other test uses (limiter keys are per queue, on the shared Redis). */
export function scenarioQueue(name: string): string {
  return `faults-${name}-${randomBytes(4).toString("hex")}`;
}

/** Enqueues `count` jobs in batches through the gateway at `grpcUrl`; returns the acknowledged ids. */
export async function enqueueJobs(grpcUrl: string, queue: string, count: number): Promise<string[]> {
  const client = new Client({ baseUrl: grpcUrl, token: FAULT_TOKEN });
  const ids: string[] = [];
  for (let start = 0; start < count; start += 500) {
    const specs = Array.from({ length: Math.min(500, count - start) }, (_, i) => ({
      queue,
      payload: { n: start + i },
      maxAttempts: 100,
    }));
    for (const r of await client.enqueueBatch(specs)) ids.push(r.jobId);
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
