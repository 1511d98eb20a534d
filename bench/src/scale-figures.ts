// Postgres connections and Postgres CPU per job with 1 and with 3 gateways under the same drain, with
// Postgres straight and behind PgBouncer (pool_mode = transaction): the figures of docs/running-at-scale.md.
// A small script, not the full bench: the gateways run in this process (the cluster tests' harness),
// 12 SDK workers (concurrency 4, handlers that return at once) in a child process, over the gateways
// round-robin; a backlog of `jobs` jobs is drained. Postgres CPU is its backends' for the database;
// connections are the most pg_stat_activity listed for it during the drain (sampled every 50 ms).
//   node --conditions=taskq-source --import tsx bench/src/scale-figures.ts [rounds=2] [jobs=5000]
import { enqueueMany, haveService, spawnFleet, startCluster, testServices } from "@taskq/gateway/testing";
import pg from "pg";
import { CpuMeter } from "./cpu-meter.js";
import { loadavg1 } from "./infra.js";

// The cluster harness's Postgres and Redis, through the tests' guard.
if (!haveService("postgres") || !haveService("redis"))
  throw new Error("scale-figures needs TASKQ_TEST_DATABASE_URL and TASKQ_TEST_REDIS_URL");
const adminUrl = testServices.postgresUrl;
const rounds = Number(process.argv[2] ?? 2);
const jobs = Number(process.argv[3] ?? 5000);
const POOL = 10;

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const rows = new Map<string, { jobsPerSec: number[]; pgUs: number[]; connections: number[] }>();
try {
  for (let round = 0; round < rounds; round++) {
    for (const topology of ["plain", "pgbouncer"] as const) {
      for (const size of [1, 3]) {
        process.env.TASKQ_TEST_TOPOLOGY = topology;
        const c = await startCluster({ size, config: { dbPoolSize: POOL } });
        try {
          const database = (c.pg as unknown as { database: string }).database;
          const queue = c.name("drain");
          await enqueueMany(c, queue, jobs);
          const fleet = await spawnFleet(c, { count: 12, queues: [queue], concurrency: 4, handlerMs: 0 });
          const meter = new CpuMeter({ children: {}, postgres: { admin, database } });
          const start = await meter.open();
          let most = 0;
          for (;;) {
            const r = await admin.query<{ conns: number }>(
              "select count(*)::int as conns from pg_stat_activity where datname = $1",
              [database],
            );
            most = Math.max(most, r.rows[0]?.conns ?? 0);
            const d = await c.pg.query<{ n: number }>(
              "select count(*)::int as n from taskq.jobs where queue = $1 and state = 'succeeded'",
              [queue],
            );
            if ((d.rows[0]?.n ?? 0) >= jobs) break;
            await new Promise((r) => setTimeout(r, 50));
          }
          const end = await meter.close();
          await fleet.stop();
          const key = `${topology === "plain" ? "Postgres direct" : "PgBouncer"}, ${size} gateway${size > 1 ? "s" : ""}`;
          const row = rows.get(key) ?? { jobsPerSec: [], pgUs: [], connections: [] };
          row.jobsPerSec.push(Math.round(jobs / ((end - start) / 1000)));
          row.pgUs.push(meter.perJob(jobs).postgres ?? 0);
          // Less this script's own reading connection.
          row.connections.push(most - 1);
          rows.set(key, row);
        } finally {
          await c.stop();
        }
      }
    }
    console.error(`round ${round + 1}/${rounds} done (load ${loadavg1()})`);
  }
} finally {
  await admin.end();
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
console.log(
  `set-up (dbPoolSize ${POOL}) | Postgres connections (most) | Postgres CPU µs/job | jobs/s | all rounds jobs/s`,
);
for (const [key, r] of rows)
  console.log(
    `${key} | ${Math.max(...r.connections)} | ${median(r.pgUs)} | ${median(r.jobsPerSec)} | ${r.jobsPerSec.join(", ")}`,
  );
console.log(`load average at the end: ${loadavg1()} (2 cores shared with other work)`);
