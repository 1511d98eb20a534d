import { startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "./client.js";
import { JobState } from "./gen/taskq/v1/job_pb.js";
import { silentLogger } from "./logger.js";
import { type Handler, Worker } from "./worker.js";

// A prefetching worker against a real gateway (embedded PGlite): its buffer, what it gives back, and
// what the default look-ahead (prefetch "auto") may hold and must not.
let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(() => gateway.stop());

async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("timed out waiting for condition");
    await pause(5);
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const admin = (method: string, body: object) =>
  fetch(`${gateway.httpUrl}/taskq.v1.AdminService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  }).then((r) => {
    if (!r.ok) throw new Error(`${method}: HTTP ${r.status}`);
    return r.json();
  });

/** A worker of one slot and `prefetch` 3 whose handlers run until the test lets each one finish. */
function heldWorker(queue: string) {
  const started: string[] = [];
  const finishers: (() => void)[] = [];
  let startsAfterPause = 0;
  const worker: Worker = new Worker({
    baseUrl: gateway.grpcUrl,
    queues: [queue],
    concurrency: 1,
    prefetch: 3,
    maxWaitMs: 2_000,
    logger: silentLogger,
    handler: (job) => {
      started.push(job.id);
      if ((worker.snapshot().throttled.PAUSED ?? 0) > 0) startsAfterPause++;
      return new Promise<void>((resolve) => finishers.push(resolve));
    },
  });
  const finishOne = () => finishers.shift()?.();
  return { worker, started, finishOne, startsAfterPause: () => startsAfterPause };
}

describe("Worker with prefetch, against a real gateway", () => {
  it("holds jobs ahead of its slot; on PAUSED it starts none of them and gives them back, attempt uncounted", async () => {
    const queue = "prefetch-pause";
    const client = new Client({ baseUrl: gateway.grpcUrl });
    const w = heldWorker(queue);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 4; i++)
        ids.push((await client.enqueue({ queue, payload: { i }, maxAttempts: 5 })).jobId);
      await w.worker.start();
      // One job runs, three wait in the buffer, all four claimed (running in the store).
      await until(() => w.worker.snapshot().buffered === 3 && w.started.length === 1);
      expect(w.worker.snapshot()).toMatchObject({ running: 1, buffered: 3, claimed: 4 });
      for (const id of ids) expect((await client.getJob(id)).state).toBe(JobState.RUNNING);

      await admin("PauseQueue", { queue });
      // The slot frees: the next buffered job starts at once (the worker has not heard of the pause yet),
      // and the poll for the freed slot brings the PAUSED verdict, which gives back the other two.
      w.finishOne();
      await until(() => (w.worker.snapshot().throttled.PAUSED ?? 0) > 0);
      await until(() => w.worker.snapshot().released === 2);
      expect(w.worker.snapshot().buffered).toBe(0);
      expect(w.startsAfterPause()).toBe(0);
      w.finishOne();
      await until(() => w.worker.snapshot().succeeded === 2);
      expect(w.started).toEqual(ids.slice(0, 2));

      // The two it gave back are ready again, attempt 1 burned but not counted (5 attempts still left).
      for (const id of ids.slice(2)) {
        const job = await client.getJob(id);
        expect(job).toMatchObject({ state: JobState.QUEUED, attempt: 1, maxAttempts: 6 });
      }
      await w.worker.stop();
      expect(w.startsAfterPause()).toBe(0);
    } finally {
      await w.worker.stop({ graceMs: 0 });
      client.close();
    }
  });

  it("gives its buffer back on stop(), and another worker runs those jobs at once", async () => {
    const queue = "prefetch-stop";
    const client = new Client({ baseUrl: gateway.grpcUrl });
    const w = heldWorker(queue);
    const ran: string[] = [];
    const other = new Worker({
      baseUrl: gateway.grpcUrl,
      queues: [queue],
      concurrency: 4,
      maxWaitMs: 2_000,
      logger: silentLogger,
      handler: async (job) => {
        ran.push(job.id);
      },
    });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push((await client.enqueue({ queue, payload: { i } })).jobId);
      await w.worker.start();
      await until(() => w.worker.snapshot().buffered === 3);
      const stopping = w.worker.stop({ graceMs: 5_000 });
      await until(() => w.worker.snapshot().released === 3);
      // Given back well before their 30 s leases would have run out: another worker runs them now.
      await other.start();
      await until(() => ran.length === 3, 5_000);
      expect(ran.sort()).toEqual(ids.slice(1).sort());
      w.finishOne();
      await stopping;
      expect(w.started).toEqual(ids.slice(0, 1));
    } finally {
      await Promise.all([w.worker.stop({ graceMs: 0 }), other.stop({ graceMs: 0 })]);
      client.close();
    }
  });
});

/** Default workers on one queue (worker i runs `handler(i)`), with a sampler of their snapshots every ms. */
function workers(queue: string, n: number, concurrency: number, handler: (i: number) => Handler) {
  const ws = Array.from(
    { length: n },
    (_, i) =>
      new Worker({
        baseUrl: gateway.grpcUrl,
        queues: [queue],
        concurrency,
        maxWaitMs: 2_000,
        logger: silentLogger,
        handler: handler(i),
      }),
  );
  const peaks = { buffered: 0, lookAhead: 0 };
  const sampler = setInterval(() => {
    for (const w of ws) {
      const s = w.snapshot();
      peaks.buffered = Math.max(peaks.buffered, s.buffered);
      peaks.lookAhead = Math.max(peaks.lookAhead, s.lookAhead);
    }
  }, 1);
  const stop = async () => {
    clearInterval(sampler);
    await Promise.all(ws.map((w) => w.stop({ graceMs: 0 })));
  };
  return { ws, peaks, stop };
}

describe("default workers (prefetch auto) against a real gateway", () => {
  it("on a queue with max_running 2, two workers of 5 slots never run more than 2 and never buffer its jobs", async () => {
    const queue = "auto-max-running";
    const client = new Client({ baseUrl: gateway.grpcUrl });
    let running = 0;
    let peakRunning = 0;
    const { ws, peaks, stop } = workers(queue, 2, 5, () => async () => {
      running++;
      peakRunning = Math.max(peakRunning, running);
      await pause(1);
      running--;
    });
    const succeeded = () => ws.reduce((n, w) => n + w.snapshot().succeeded, 0);
    try {
      // Without a cap, the workers learn to hold these short jobs ahead.
      await client.enqueueBatch(Array.from({ length: 300 }, () => ({ queue })));
      await Promise.all(ws.map((w) => w.start()));
      await until(() => succeeded() === 300, 60_000);
      expect(peaks.buffered).toBeGreaterThan(0);
      await admin("SetQueueConcurrency", { queue, maxRunning: 2 });
      await pause(200); // every gateway's cached settings follow the change
      Object.assign(peaks, { buffered: 0, lookAhead: 0 });
      peakRunning = running;
      await client.enqueueBatch(Array.from({ length: 300 }, () => ({ queue })));
      await until(() => succeeded() === 600, 60_000);
      expect(peakRunning).toBeLessThanOrEqual(2);
      expect(peaks.buffered).toBe(0);
      // Not vacuous: the workers still wanted to hold jobs ahead.
      expect(peaks.lookAhead).toBeGreaterThan(0);
    } finally {
      await stop();
      client.close();
    }
  });

  it("two workers share 40 jobs of 200 ms: both run jobs within the first second", async () => {
    const queue = "auto-share";
    const client = new Client({ baseUrl: gateway.grpcUrl });
    const firstStart = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
    let t0 = 0;
    const { ws, peaks, stop } = workers(queue, 2, 5, (who) => async () => {
      firstStart[who] = Math.min(firstStart[who] ?? Number.POSITIVE_INFINITY, performance.now() - t0);
      await pause(200);
    });
    try {
      await Promise.all(ws.map((w) => w.start()));
      t0 = performance.now();
      await client.enqueueBatch(Array.from({ length: 40 }, () => ({ queue })));
      await until(() => ws.reduce((n, w) => n + w.snapshot().succeeded, 0) === 40, 30_000);
      expect(firstStart[0]).toBeLessThan(1_000);
      expect(firstStart[1]).toBeLessThan(1_000);
      // A poll as slow as a loaded machine makes it may justify a job or two ahead, never a hoard.
      expect(peaks.buffered).toBeLessThan(5);
      for (const w of ws) expect(w.snapshot().succeeded).toBeGreaterThanOrEqual(10);
    } finally {
      await stop();
      client.close();
    }
  });
});
