import pg from "pg";
import PgBoss from "pg-boss";
import { type LatencyOptions, measureLatency } from "../latency.js";
import {
  Countdown,
  type DrainResult,
  type DrainWindow,
  drainResult,
  jobWork,
  type PeerAdapter,
  type PeerContext,
  type PeerFactory,
  waitUntil,
} from "./adapter.js";

const QUEUE = "bench";
/** pg-boss 10 refuses anything below 0.5 s. */
const POLL_SECONDS = 0.5;

/**
 * pg-boss 10. Its concurrency mechanism is `batchSize`: one `work()` loop fetches up to `batchSize`
 * jobs, hands them to the handler as an array and completes them in one statement. The loop then
 * sleeps until `pollingIntervalSeconds` has passed since the fetch began, even when the queue is full,
 * so with `batchSize = concurrency` it moves at most `concurrency / 0.5 s` jobs per second. Running
 * several `work()` loops instead would raise jobs in flight above `concurrency`, so we don't.
 */
function pgBoss(ctx: PeerContext): PeerAdapter {
  let boss: PgBoss | undefined;
  let pool: pg.Pool | undefined;

  async function startWorkers(concurrency: number, onJob: (data: unknown) => void): Promise<void> {
    if (!boss) throw new Error("setup() first");
    await boss.work(QUEUE, { batchSize: concurrency, pollingIntervalSeconds: POLL_SECONDS }, async (jobs) => {
      for (const job of jobs) onJob(job.data);
      await jobWork(ctx);
    });
  }

  return {
    name: "pg-boss",
    stores: ["postgres"],
    async setup() {
      // No cron in this benchmark: `schedule: false` skips the clock/cron monitors.
      boss = new PgBoss({ connectionString: ctx.databaseUrl, schedule: false });
      boss.on("error", (err) => ctx.log(`pg-boss error: ${err.message}`));
      await boss.start();
      await boss.createQueue(QUEUE);
      pool = new pg.Pool({ connectionString: ctx.databaseUrl, max: 1 });
    },
    async enqueue(n: number) {
      if (!boss) throw new Error("setup() first");
      // `insert` is pg-boss's bulk path: one statement per call.
      for (let i = 0; i < n; i += 5_000) {
        await boss.insert(Array.from({ length: Math.min(5_000, n - i) }, () => ({ name: QUEUE, data: {} })));
      }
      // As for graphile-worker: what autovacuum would have done by steady state.
      await pool?.query("analyze pgboss.job");
    },
    async drain(n: number, concurrency: number, window: DrainWindow): Promise<DrainResult> {
      const db = pool;
      if (!boss || !db) throw new Error("setup() first");
      const countdown = new Countdown(n);
      const startedAt = await window.open();
      await startWorkers(concurrency, () => countdown.tick());
      try {
        await countdown.done;
        // pg-boss completes a batch after the handler resolves without awaiting it; wait for the row states.
        await waitUntil(async () => {
          const r = await db.query(
            "select exists(select 1 from pgboss.job where name = $1 and state in ('created', 'retry', 'active')) as any",
            [QUEUE],
          );
          return r.rows[0]?.any === false;
        });
        return {
          ...drainResult(n, startedAt, await window.close()),
          note: `polling-bound: at most batchSize=${concurrency} jobs per ${POLL_SECONDS} s poll`,
        };
      } finally {
        await boss.offWork(QUEUE);
      }
    },
    async latency(options: LatencyOptions) {
      return measureLatency(options, {
        startWorkers: (concurrency, onStart) =>
          startWorkers(concurrency, (data) => onStart((data as { t: number }).t)),
        enqueue: async (stamps) => {
          await boss?.insert(stamps.map((t) => ({ name: QUEUE, data: { t } })));
        },
        stopWorkers: async () => {
          await boss?.offWork(QUEUE);
        },
      });
    },
    async teardown() {
      await boss?.stop({ graceful: false, wait: true });
      await pool?.end();
      boss = undefined;
      pool = undefined;
    },
  };
}

export const pgBossPeer: PeerFactory = { name: "pg-boss", create: pgBoss };
