import { startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "./client.js";
import { JobState } from "./gen/taskq/v1/job_pb.js";
import { silentLogger } from "./logger.js";
import { Worker } from "./worker.js";

// A prefetching worker against a real gateway (embedded PGlite): its buffer, and what it gives back.
let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(() => gateway.stop());

async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("timed out waiting for condition");
    await new Promise((r) => setTimeout(r, 10));
  }
}

const admin = (method: string, body: object) =>
  fetch(`${gateway.httpUrl}/taskq.v1.AdminService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  }).then((r) => {
    if (!r.ok) throw new Error(`${method}: HTTP ${r.status}`);
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
