import { migrate, Store } from "@taskq/gateway";
import { postgresDb } from "@taskq/gateway/testing";
import pg from "pg";
import { CpuMeter } from "./cpu-meter.js";
import { createThrowawayDatabase, loadavg1 } from "./infra.js";
import { drainResult } from "./peers/adapter.js";
import type { ScenarioOptions } from "./scenario.js";

// The enqueue half of `bench store`: the gateway's enqueue statement (taskq.jobs_enqueue through
// Store.jobsEnqueue, as the Enqueue RPCs run it: autocommit, prepared per connection) against the SQL
// functions an application calls in its own transaction (taskq.enqueue, taskq.enqueue_batch: sent as
// node-postgres sends any parameterized query, unnamed, so parsed and planned at each call). Same queue,
// same 100-byte payload, one statement in flight, each way on a fresh database of its own.

const QUEUE = "bench";
const PAYLOAD = new Uint8Array(100).fill(0x61);

type NewJob = Parameters<Store["jobsEnqueue"]>[0][number];

/** What the RPC hands Store.jobsEnqueue for a job given only a queue and a payload. */
const rpcJob: NewJob = {
  queue: QUEUE,
  payload: PAYLOAD,
  contentType: "",
  priority: 0,
  flowKey: null,
  runAt: null,
  delayMs: null,
  ttlSeconds: 0,
  maxAttempts: 25,
  idempotencyKey: null,
  headers: {},
};

export interface EnqueueWay {
  /** Statement run, as the table names it. */
  name: "jobs_enqueue (RPC)" | "taskq.enqueue" | "taskq.enqueue_batch";
  /** Jobs per statement. */
  batch: number;
  /**
   * `autocommit`: the statement is its transaction; `begin/commit`: three round trips, as an
   * application's; `100 a transaction`: 100 statements between one begin and commit, the cost of an
   * enqueue added to a transaction the application commits anyway.
   */
  tx: "autocommit" | "begin/commit" | "100 a transaction";
}

/** Interleaved in this order within each round. */
export const ENQUEUE_WAYS: readonly EnqueueWay[] = [
  { name: "jobs_enqueue (RPC)", batch: 1, tx: "autocommit" },
  { name: "jobs_enqueue (RPC)", batch: 100, tx: "autocommit" },
  { name: "taskq.enqueue", batch: 1, tx: "autocommit" },
  { name: "taskq.enqueue", batch: 1, tx: "begin/commit" },
  { name: "taskq.enqueue", batch: 1, tx: "100 a transaction" },
  { name: "taskq.enqueue_batch", batch: 100, tx: "autocommit" },
];

export const wayKey = (w: EnqueueWay) => `${w.name} B=${w.batch} ${w.tx}`;

export interface EnqueueRun extends EnqueueWay {
  jobs: number;
  jobsPerSec: number;
  loadavg1: number;
  cpuUsPerJob: { node: number; postgres: number };
}

/** One run of `way`: a statement of `way.batch` jobs, or (100 a transaction) a transaction of them. */
function statement(way: EnqueueWay, store: Store, client: pg.Client): () => Promise<unknown> {
  const payload = Buffer.from(PAYLOAD);
  if (way.name === "jobs_enqueue (RPC)") {
    const batch = Array.from({ length: way.batch }, () => rpcJob);
    return () => store.jobsEnqueue(batch);
  }
  if (way.name === "taskq.enqueue_batch") {
    // Encoded at each call, as an application builds its batch.
    return () => {
      const jobs = Array.from({ length: way.batch }, () => ({
        queue: QUEUE,
        payload_base64: payload.toString("base64"),
      }));
      return client.query("select ord, id, duplicate from taskq.enqueue_batch($1::jsonb)", [
        JSON.stringify(jobs),
      ]);
    };
  }
  const one = () => client.query("select taskq.enqueue($1, $2::bytea)", [QUEUE, payload]);
  if (way.tx === "autocommit") return one;
  const statements = jobsPerRun(way);
  return async () => {
    await client.query("begin");
    for (let i = 0; i < statements; i++) await one();
    await client.query("commit");
  };
}

/** Jobs one run of `statement(way)` enqueues. */
const jobsPerRun = (way: EnqueueWay) => (way.tx === "100 a transaction" ? 100 : way.batch);

async function enqueueN(run: () => Promise<unknown>, batch: number, n: number): Promise<void> {
  for (let done = 0; done < n; done += batch) await run();
}

/** One way on a database of its own: `warm` jobs untimed, then `jobs` timed and metered. */
export async function runEnqueue(
  way: EnqueueWay,
  jobs: number,
  o: ScenarioOptions,
  label: string,
): Promise<EnqueueRun> {
  const per = jobsPerRun(way);
  const n = Math.max(per, Math.floor(jobs / per) * per);
  const warm = Math.min(o.warmup, n);
  const db = await createThrowawayDatabase(o.config.pgAdminUrl, label);
  const admin = new pg.Client({ connectionString: o.config.pgAdminUrl });
  const client = new pg.Client({ connectionString: db.url });
  const sql = postgresDb({ url: db.url, poolSize: 2 });
  try {
    await admin.connect();
    await client.connect();
    await migrate(sql);
    const run = statement(way, new Store(sql), client);
    await enqueueN(run, per, warm);
    await client.query("vacuum analyze taskq.live_jobs");
    const meter = new CpuMeter({ children: {}, postgres: { admin, database: db.name } });
    const load = loadavg1();
    try {
      const start = await meter.open();
      await enqueueN(run, per, n);
      const { jobsPerSec } = drainResult(n, start, await meter.close());
      const cpu = meter.perJob(n);
      const out: EnqueueRun = {
        ...way,
        jobs: n,
        jobsPerSec,
        loadavg1: load,
        cpuUsPerJob: { node: cpu.worker, postgres: cpu.postgres ?? 0 },
      };
      o.log(
        `store enqueue ${wayKey(way)}: ${jobsPerSec} jobs/s; CPU µs/job node ${out.cpuUsPerJob.node}, postgres ${out.cpuUsPerJob.postgres} (load ${load})`,
      );
      return out;
    } finally {
      await meter.cancel();
    }
  } finally {
    await sql.close();
    await client.end().catch(() => {});
    await admin.end().catch(() => {});
    await db.drop();
  }
}

/** The goal these figures answer, from the medians: each comparison with its numbers and met or not. */
export function enqueueGoal(medians: readonly EnqueueRun[]): string[] {
  const pg = (name: EnqueueWay["name"], batch: number, tx: EnqueueWay["tx"] = "autocommit") =>
    medians.find((m) => m.name === name && m.batch === batch && m.tx === tx)?.cpuUsPerJob.postgres;
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  const lines: string[] = [];
  const rpc1 = pg("jobs_enqueue (RPC)", 1);
  const rpc100 = pg("jobs_enqueue (RPC)", 100);
  for (const tx of ["autocommit", "begin/commit", "100 a transaction"] as const) {
    const one = pg("taskq.enqueue", 1, tx);
    if (one !== undefined && rpc1 !== undefined)
      lines.push(
        `goal: taskq.enqueue (${tx}) ${one} <= jobs_enqueue B=1 ${rpc1} postgres µs/job: ${verdict(one <= rpc1)}`,
      );
  }
  const b100 = pg("taskq.enqueue_batch", 100);
  if (b100 !== undefined && rpc100 !== undefined)
    lines.push(
      `goal: taskq.enqueue_batch B=100 ${b100} <= jobs_enqueue B=100 ${rpc100} and <= 20 postgres µs/job: ${verdict(b100 <= rpc100 && b100 <= 20)}`,
    );
  return lines;
}
