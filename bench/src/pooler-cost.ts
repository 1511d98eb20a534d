// What a transaction pooler costs taskq's store, measured with a small loop rather than the full bench:
// the claim-and-settle loop of the store scenario (Store.jobsClaimMany of B jobs, then jobsSettle of
// them) on a backlog of plain jobs, in four set-ups, interleaved round by round so a neighbour's burst
// on a shared machine hits them alike:
//   direct, named      Postgres straight, named prepared statements (the default)
//   direct, unnamed    Postgres straight, dbPreparedStatements false: the cost of planning every call
//   pgbouncer, no bound PgBouncer (pool_mode = transaction), unnamed, no query timeout: the pooler alone
//   pgbouncer          PgBouncer, unnamed, dbPooler transaction: each lone statement in a transaction
//                      of its own with SET LOCAL statement_timeout (the query timeout behind a pooler)
// It prints jobs/s and the Postgres CPU per job (the database's backends) per set-up and batch size.
//   node --conditions=taskq-source --import tsx bench/src/pooler-cost.ts [rounds=3] [jobs=3000]
import { migrate, Store } from "@taskq/gateway";
import {
  haveCommand,
  haveService,
  PGBOUNCER,
  postgresDb,
  startPgBouncer,
  testServices,
} from "@taskq/gateway/testing";
import pg from "pg";
import { CpuMeter } from "./cpu-meter.js";
import { createThrowawayDatabase, loadavg1 } from "./infra.js";

// The tests' Postgres, through their guard, which also lets the PgBouncer helper start.
if (!haveService("postgres") || !haveCommand(PGBOUNCER, "install pgbouncer (Debian)"))
  throw new Error(
    "pooler-cost needs TASKQ_TEST_DATABASE_URL (a Postgres it may create databases on) and pgbouncer",
  );
const adminUrl = testServices.postgresUrl;
const rounds = Number(process.argv[2] ?? 3);
const jobs = Number(process.argv[3] ?? 3000);
const QUEUE = "bench";

type Setup = { name: string; via: "direct" | "pgbouncer"; named: boolean; pooler: boolean };
const SETUPS: Setup[] = [
  { name: "direct, named", via: "direct", named: true, pooler: false },
  { name: "direct, unnamed", via: "direct", named: false, pooler: false },
  { name: "pgbouncer, no bound", via: "pgbouncer", named: false, pooler: false },
  { name: "pgbouncer", via: "pgbouncer", named: false, pooler: true },
];

const bouncer = await startPgBouncer(adminUrl);
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const results = new Map<string, { jobsPerSec: number[]; pgUs: number[] }>();
try {
  for (let round = 0; round < rounds; round++) {
    for (const batch of [1, 10]) {
      for (const s of SETUPS) {
        const db = await createThrowawayDatabase(adminUrl, "pooler");
        const direct = postgresDb({ url: db.url, poolSize: 2 });
        await migrate(direct);
        await direct.close();
        const local = new pg.Client({ connectionString: db.url });
        await local.connect();
        const n = batch === 1 ? Math.min(jobs, 1000) : jobs;
        await local.query(
          `insert into taskq.jobs (queue, state, payload, max_attempts, run_at, enqueued_at)
           select $1, 'queued', '\\x7b7d'::bytea, 3, now(), now() from generate_series(1, $2::int)`,
          [QUEUE, n + 200],
        );
        await local.query("vacuum analyze taskq.jobs");
        await local.end();
        const sql = postgresDb({
          url: s.via === "direct" ? db.url : bouncer.url(db.url),
          directUrl: db.url,
          poolSize: 2,
          queryTimeoutMs: s.pooler || s.via === "direct" ? 30_000 : undefined,
          pooler: s.pooler ? "transaction" : "none",
          preparedStatements: s.named,
        });
        const store = new Store(sql);
        const cycle = async () => {
          const { jobs: claimed } = await store.jobsClaimMany({
            queues: [QUEUE],
            polls: [{ limit: batch, leaseMs: 60_000, workerId: "bench" }],
          });
          const got = claimed[0] ?? [];
          await store.jobsSettle(
            got.map((j) => ({
              jobId: j.id,
              attempt: j.attempt,
              kind: "success" as const,
              result: new Uint8Array(0),
            })),
          );
          return got.length;
        };
        for (let done = 0; done < 200; ) done += await cycle();
        const meter = new CpuMeter({ children: {}, postgres: { admin, database: db.name } });
        const start = await meter.open();
        for (let done = 0; done < n; ) done += await cycle();
        const end = await meter.close();
        const key = `${s.name} B=${batch}`;
        const r = results.get(key) ?? { jobsPerSec: [], pgUs: [] };
        r.jobsPerSec.push(Math.round(n / ((end - start) / 1000)));
        r.pgUs.push(meter.perJob(n).postgres ?? 0);
        results.set(key, r);
        await sql.close();
        await db.drop();
      }
    }
    console.error(`round ${round + 1}/${rounds} done (load ${loadavg1()})`);
  }
} finally {
  await admin.end();
  await bouncer.stop();
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
console.log("set-up, batch | jobs/s (median of rounds) | Postgres CPU µs/job | all rounds jobs/s");
for (const [key, r] of results)
  console.log(`${key} | ${median(r.jobsPerSec)} | ${median(r.pgUs)} | ${r.jobsPerSec.join(", ")}`);
console.log(`load average at the end: ${loadavg1()} (2 cores shared with other work)`);
