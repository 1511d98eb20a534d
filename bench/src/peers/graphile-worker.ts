import { Logger, makeWorkerUtils, type Runner, run, runMigrations, type WorkerUtils } from "graphile-worker";
import pg from "pg";
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

const TASK = "noop";

/** Logs nothing: per-job "Completed task" lines would dominate a no-op benchmark. */
const silent = new Logger(() => () => {});

/**
 * graphile-worker 0.18. Default mode fetches one job per worker per query and completes each job in
 * its own statement. `localQueue` mode is the library's documented fast path
 * (worker.graphile.org/docs/performance): the pool locks `localQueue.size` jobs per fetch and
 * completions are batched (`completeJobBatchDelay: 0` batches whatever finished in the same tick).
 */
function graphileWorker(
  ctx: PeerContext,
  name: string,
  /** `localQueue.size` for a worker of this concurrency; default mode when absent. */
  localQueueSize?: (concurrency: number) => number,
): PeerAdapter {
  let utils: WorkerUtils | undefined;
  /** Workers' pool, made on first use and kept, so the timed run doesn't pay for 50 fresh connections. */
  let workerPool: pg.Pool | undefined;
  /** One connection for the harness's own "all completed?" probe. */
  let probe: pg.Pool | undefined;

  function poolFor(concurrency: number): pg.Pool {
    // The docs recommend `concurrentJobs + 2`: every in-flight fetch/complete holds a client.
    if (!workerPool) {
      workerPool = new pg.Pool({ connectionString: ctx.databaseUrl, max: concurrency + 2 });
      // Idle and checked-out clients both need handlers, or a dropped connection crashes the process.
      const onError = (err: Error) => ctx.log(`graphile-worker pool error: ${err.message}`);
      workerPool.on("error", onError);
      workerPool.on("connect", (client) => client.on("error", onError));
    }
    return workerPool;
  }

  async function startWorkers(concurrency: number, onJob: (payload: unknown) => void): Promise<Runner> {
    return run({
      pgPool: poolFor(concurrency),
      preset: {
        worker: {
          concurrentJobs: concurrency,
          ...(localQueueSize && {
            localQueue: { size: localQueueSize(concurrency) },
            completeJobBatchDelay: 0,
            failJobBatchDelay: 0,
          }),
        },
      },
      logger: silent,
      noHandleSignals: true,
      taskList: {
        [TASK]: async (payload) => {
          onJob(payload);
          await jobWork(ctx);
        },
      },
    });
  }

  return {
    name,
    stores: ["postgres"],
    async setup() {
      await runMigrations({ connectionString: ctx.databaseUrl, logger: silent });
      utils = await makeWorkerUtils({ connectionString: ctx.databaseUrl, logger: silent });
      probe = new pg.Pool({ connectionString: ctx.databaseUrl, max: 1 });
    },
    async enqueue(n: number) {
      if (!utils) throw new Error("setup() first");
      // `addJobs` is one `add_jobs` call per batch; 5,000 keeps each statement's parameters modest.
      for (let i = 0; i < n; i += 5_000) {
        const specs = Array.from({ length: Math.min(5_000, n - i) }, () => ({
          identifier: TASK,
          payload: {},
        }));
        await utils.addJobs(specs);
      }
      // Autovacuum would ANALYZE a table this busy within a minute in production; without stats the
      // first plans over a freshly bulk-loaded table are far worse.
      await utils.withPgClient((c) => c.query("analyze graphile_worker._private_jobs"));
    },
    async drain(n: number, concurrency: number, window: DrainWindow): Promise<DrainResult> {
      const db = probe;
      if (!db) throw new Error("setup() first");
      const countdown = new Countdown(n);
      const startedAt = await window.open();
      const runner = await startWorkers(concurrency, () => countdown.tick());
      try {
        await countdown.done;
        // Completion is written after the handler returns (batched in fast mode); graphile deletes
        // completed jobs, so an empty table is the durable "all done".
        await waitUntil(async () => {
          const r = await db.query("select exists(select 1 from graphile_worker._private_jobs) as any");
          return r.rows[0]?.any === false;
        });
        return drainResult(n, startedAt, await window.close());
      } finally {
        await runner.stop();
      }
    },
    async latency(options: LatencyOptions) {
      let runner: Runner | undefined;
      return measureLatency(options, {
        startWorkers: async (concurrency, onStart) => {
          runner = await startWorkers(concurrency, (payload) => onStart((payload as { t: number }).t));
        },
        enqueue: async (stamps) => {
          await utils?.addJobs(stamps.map((t) => ({ identifier: TASK, payload: { t } })));
        },
        stopWorkers: async () => {
          await runner?.stop();
        },
      });
    },
    async teardown() {
      await utils?.release();
      await workerPool?.end();
      await probe?.end();
      utils = undefined;
      workerPool = undefined;
      probe = undefined;
    },
  };
}

/** graphile-worker with its defaults: one fetch per job, one completion statement per job. */
export const graphileWorkerPeer: PeerFactory = {
  name: "graphile-worker",
  create: (ctx) => graphileWorker(ctx, "graphile-worker"),
};

/** graphile-worker's documented fast path: `localQueue` batch fetch + batched completions. */
export const graphileWorkerLocalQueuePeer: PeerFactory = {
  name: "graphile-worker-localQueue",
  create: (ctx) => graphileWorker(ctx, "graphile-worker-localQueue", () => 500),
};

/**
 * The fast path with `localQueue.size` equal to the concurrency. The local queue fetches its next batch
 * once its last waiting job is taken, while the jobs taken run: it holds up to twice its concurrency
 * locked (the documented 500 holds up to eleven times 50), where a taskq worker never holds more than its
 * concurrency. Run on request (`--only`), to tell how much of the fast path's lead comes from locking
 * jobs ahead of its workers.
 */
export const graphileWorkerLocalQueueSmallPeer: PeerFactory = {
  name: "graphile-worker-localQueue-small",
  create: (ctx) => graphileWorker(ctx, "graphile-worker-localQueue-small", (concurrency) => concurrency),
};
