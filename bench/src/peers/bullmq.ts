import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
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
} from "./adapter.js";

const QUEUE = "bench";

/**
 * BullMQ 5 on Redis. One `Worker` with `concurrency` slots: it fetches the next job inside the same Lua
 * call that completes the previous one, which is BullMQ's own fast path. `removeOnComplete` is what
 * their docs recommend for high-volume queues (no completed-set growth).
 */
function bullmq(ctx: PeerContext): PeerAdapter {
  let connection: Redis | undefined;
  let queue: Queue | undefined;

  function startWorker(concurrency: number, onJob: (data: unknown) => void): Worker {
    if (!connection) throw new Error("setup() first");
    const worker = new Worker(
      QUEUE,
      async (job) => {
        onJob(job.data);
        await jobWork(ctx);
      },
      {
        connection,
        prefix: ctx.keyPrefix,
        concurrency,
        autorun: false,
        removeOnComplete: { count: 0 },
        removeOnFail: { count: 0 },
      },
    );
    worker.on("error", (err) => ctx.log(`bullmq worker error: ${err.message}`));
    return worker;
  }

  return {
    name: "bullmq",
    stores: ["redis"],
    async setup() {
      // `maxRetriesPerRequest: null` is required by BullMQ for connections a Worker uses.
      connection = new Redis(ctx.redisUrl, { maxRetriesPerRequest: null });
      queue = new Queue(QUEUE, { connection, prefix: ctx.keyPrefix });
      await queue.waitUntilReady();
    },
    async enqueue(n: number) {
      if (!queue) throw new Error("setup() first");
      for (let i = 0; i < n; i += 5_000) {
        const jobs = Array.from({ length: Math.min(5_000, n - i) }, () => ({ name: "noop", data: {} }));
        await queue.addBulk(jobs);
      }
    },
    async drain(n: number, concurrency: number, window: DrainWindow): Promise<DrainResult> {
      const countdown = new Countdown(n);
      const worker = startWorker(concurrency, () => {});
      // "completed" is emitted after the job was moved to completed in Redis: the durable signal.
      worker.on("completed", () => countdown.tick());
      const startedAt = await window.open();
      const running = worker.run();
      try {
        const doneAt = await countdown.done;
        await window.close();
        return drainResult(n, startedAt, doneAt);
      } finally {
        await worker.close();
        await running;
      }
    },
    async latency(options: LatencyOptions) {
      let worker: Worker | undefined;
      let running: Promise<void> | undefined;
      return measureLatency(options, {
        startWorkers: async (concurrency, onStart) => {
          worker = startWorker(concurrency, (data) => onStart((data as { t: number }).t));
          running = worker.run();
          await worker.waitUntilReady();
        },
        enqueue: async (stamps) => {
          await queue?.addBulk(stamps.map((t) => ({ name: "noop", data: { t } })));
        },
        stopWorkers: async () => {
          await worker?.close();
          await running;
        },
      });
    },
    async teardown() {
      // Removes every key of the queue under this run's prefix; db 9 is shared with other runs.
      await queue?.obliterate({ force: true });
      await queue?.close();
      connection?.disconnect();
      queue = undefined;
      connection = undefined;
    },
  };
}

export const bullmqPeer: PeerFactory = { name: "bullmq", create: bullmq };
