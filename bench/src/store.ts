import { setTimeout as sleep } from "node:timers/promises";
import { migrate, Store } from "@taskq/gateway";
import { postgresDb } from "@taskq/gateway/testing";
import pg from "pg";
import { CpuMeter } from "./cpu-meter.js";
import { medianRun } from "./drain-report.js";
import { createThrowawayDatabase, loadavg1, machineInfo } from "./infra.js";
import { percentile } from "./latency.js";
import { drainResult } from "./peers/adapter.js";
import type { Scenario, ScenarioOptions } from "./scenario.js";
import { textTable } from "./scenario.js";
import { ENQUEUE_WAYS, type EnqueueRun, enqueueGoal, runEnqueue, wayKey } from "./store-enqueue.js";

// taskq's claim and settle statements on their own, with no gRPC, gateway or worker around them: a loop
// of `Store.jobsClaimMany` (one poll of B jobs) and `Store.jobsSettle` (those B jobs, succeeded) over a
// backlog of plain jobs, as the gateway runs them for one worker. Per batch size B it reports jobs/s and
// the CPU per job of this process (the gateway's side: the pg driver) and of Postgres, so the fixed cost
// of a statement and the cost of each row can be read apart. It also times a one-job claim after the
// loop, before and after VACUUM: a claim walks the index entries of every job claimed since the last
// vacuum before it finds a ready one. Then the enqueue statements, the gateway's against an
// application's in its own transaction (store-enqueue.ts), in the same rounds.

const BATCHES = [1, 10, 50, 200] as const;
const QUEUE = "bench";
/** One-job claims timed before and after VACUUM. */
const PROBES = 200;

export interface StoreRun {
  batch: number;
  jobs: number;
  jobsPerSec: number;
  loadavg1: number;
  cpuUsPerJob: { node: number; postgres: number };
}

export interface StoreReport {
  scenario: "store";
  machine: ReturnType<typeof machineInfo>;
  runs: StoreRun[];
  /** Median run per batch size. */
  medians: StoreRun[];
  /** p50 of a one-job claim, ms, with the jobs of the largest batch's run claimed since vacuum, then after it. */
  claimAfterBacklog?: { claimedSinceVacuum: number; beforeVacuumMs: number; afterVacuumMs: number };
  /** Every enqueue run (store-enqueue.ts), and the median run per way. */
  enqueueRuns: EnqueueRun[];
  enqueueMedians: EnqueueRun[];
  error?: string;
}

/** Jobs a run at batch size `b` drains: enough batches to measure, few enough that B=1 stays short. */
const jobsFor = (b: number, jobs: number) => Math.min(jobs, 1_000 * b);

async function fill(admin: pg.Client, n: number): Promise<void> {
  await admin.query(
    `insert into taskq.jobs (queue, state, payload, max_attempts, run_at, enqueued_at)
     select $1, 'queued', '\\x7b7d'::bytea, 3, now(), now() from generate_series(1, $2::int)`,
    [QUEUE, n],
  );
  await admin.query("vacuum analyze taskq.live_jobs");
}

async function cycle(store: Store, batch: number): Promise<number> {
  const { jobs } = await store.jobsClaimMany({
    queues: [QUEUE],
    polls: [{ limit: batch, leaseMs: 60_000, workerId: "bench" }],
  });
  const claimed = jobs[0] ?? [];
  await store.jobsSettle(
    claimed.map((j) => ({
      jobId: j.id,
      attempt: j.attempt,
      kind: "success" as const,
      result: new Uint8Array(0),
    })),
  );
  return claimed.length;
}

async function drainBy(store: Store, batch: number, n: number): Promise<void> {
  for (let done = 0; done < n; ) {
    const got = await cycle(store, batch);
    if (got === 0) throw new Error(`backlog ran out after ${done} of ${n} jobs`);
    done += got;
  }
}

async function claimOneP50(store: Store): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < PROBES; i++) {
    const t = performance.now();
    await store.jobsClaimMany({ queues: [QUEUE], polls: [{ limit: 1, leaseMs: 60_000, workerId: "probe" }] });
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return Math.round(percentile(ms, 50) * 100) / 100;
}

/** One batch size on a database of its own; the largest also measures the claim after its backlog. */
async function runBatch(
  batch: number,
  o: ScenarioOptions,
  probe: boolean,
): Promise<{ run: StoreRun; claimAfterBacklog?: StoreReport["claimAfterBacklog"] }> {
  const n = jobsFor(batch, o.jobs);
  const warm = Math.min(o.warmup, n);
  const db = await createThrowawayDatabase(o.config.pgAdminUrl, `store_${batch}`);
  const admin = new pg.Client({ connectionString: o.config.pgAdminUrl });
  const local = new pg.Client({ connectionString: db.url });
  const sql = postgresDb({ url: db.url, poolSize: 2 });
  try {
    await admin.connect();
    await local.connect();
    await migrate(sql);
    await fill(local, n + warm + (probe ? 2 * PROBES : 0));
    const store = new Store(sql);
    await drainBy(store, batch, warm);
    const meter = new CpuMeter({ children: {}, postgres: { admin, database: db.name } });
    const load = loadavg1();
    try {
      const start = await meter.open();
      await drainBy(store, batch, n);
      const { jobsPerSec } = drainResult(n, start, await meter.close());
      const cpu = meter.perJob(n);
      const run: StoreRun = {
        batch,
        jobs: n,
        jobsPerSec,
        loadavg1: load,
        cpuUsPerJob: { node: cpu.worker, postgres: cpu.postgres ?? 0 },
      };
      o.log(
        `store B=${batch}: ${run.jobsPerSec} jobs/s; CPU µs/job node ${run.cpuUsPerJob.node}, postgres ${run.cpuUsPerJob.postgres} (load ${load})`,
      );
      if (!probe) return { run };
      const beforeVacuumMs = await claimOneP50(store);
      await local.query("vacuum taskq.live_jobs");
      await sleep(100);
      const afterVacuumMs = await claimOneP50(store);
      o.log(
        `store: one-job claim p50 ${beforeVacuumMs} ms with ${n + warm} claimed since vacuum, ${afterVacuumMs} ms after it`,
      );
      return { run, claimAfterBacklog: { claimedSinceVacuum: n + warm, beforeVacuumMs, afterVacuumMs } };
    } finally {
      await meter.cancel();
    }
  } finally {
    await sql.close();
    await local.end().catch(() => {});
    await admin.end().catch(() => {});
    await db.drop();
  }
}

async function run(o: ScenarioOptions): Promise<StoreReport> {
  const report: StoreReport = {
    scenario: "store",
    machine: machineInfo(),
    runs: [],
    medians: [],
    enqueueRuns: [],
    enqueueMedians: [],
  };
  const largest = BATCHES[BATCHES.length - 1];
  try {
    // Batch sizes interleave run by run, so a slow stretch of the machine falls on all of them.
    for (let r = 1; r <= o.runs; r++) {
      o.log(`round ${r} of ${o.runs}`);
      for (const batch of BATCHES) {
        const res = await runBatch(batch, o, r === o.runs && batch === largest);
        report.runs.push(res.run);
        if (res.claimAfterBacklog) report.claimAfterBacklog = res.claimAfterBacklog;
      }
      for (const [i, way] of ENQUEUE_WAYS.entries()) {
        report.enqueueRuns.push(await runEnqueue(way, jobsFor(way.batch, o.jobs), o, `store_enqueue_${i}`));
      }
    }
  } catch (err) {
    report.error = err instanceof Error ? err.message : String(err);
  }
  report.medians = BATCHES.flatMap((b) => {
    const runs = report.runs.filter((x) => x.batch === b);
    return runs.length ? [medianRun(runs)] : [];
  });
  report.enqueueMedians = ENQUEUE_WAYS.flatMap((w) => {
    const runs = report.enqueueRuns.filter((x) => wayKey(x) === wayKey(w));
    return runs.length ? [medianRun(runs)] : [];
  });
  return report;
}

function table(r: StoreReport): string {
  const rows = [
    ["batch", "jobs/s", "node µs/job", "postgres µs/job"],
    ...r.medians.map((m) => [
      String(m.batch),
      String(m.jobsPerSec),
      String(m.cpuUsPerJob.node),
      String(m.cpuUsPerJob.postgres),
    ]),
  ];
  const c = r.claimAfterBacklog;
  const probe = c
    ? `\none-job claim p50: ${c.beforeVacuumMs} ms with ${c.claimedSinceVacuum} jobs claimed since vacuum, ${c.afterVacuumMs} ms after it`
    : "";
  const enqueue = r.enqueueMedians.length
    ? `\n\n${textTable([
        ["enqueue", "jobs/stmt", "transaction", "jobs/s", "node µs/job", "postgres µs/job"],
        ...r.enqueueMedians.map((m) => [
          m.name,
          String(m.batch),
          m.tx,
          String(m.jobsPerSec),
          String(m.cpuUsPerJob.node),
          String(m.cpuUsPerJob.postgres),
        ]),
      ])}${enqueueGoal(r.enqueueMedians)
        .map((line) => `\n${line}`)
        .join("")}`
    : "";
  return `${textTable(rows)}${probe}${enqueue}${r.error ? `\nFAILED: ${r.error}` : ""}`;
}

export const storeScenario: Scenario<StoreReport> = {
  name: "store",
  summary:
    "taskq's claim + settle statements alone, by batch size (1-200), then enqueue by RPC vs SQL: jobs/s, Node and Postgres CPU/job",
  run,
  table,
  failed: (r) => r.error !== undefined,
};
