import { startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "./client.js";
import { silentLogger } from "./logger.js";
import { type Handler, Worker } from "./worker.js";

// Default workers (prefetch "auto") against a real gateway (embedded PGlite): what their look-ahead
// may hold, and what it must not.
let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(() => gateway.stop());

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("timed out waiting for condition");
    await pause(5);
  }
}

const admin = (method: string, body: object) =>
  fetch(`${gateway.httpUrl}/taskq.v1.AdminService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  }).then((r) => {
    if (!r.ok) throw new Error(`${method}: HTTP ${r.status}`);
    return r.json();
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
