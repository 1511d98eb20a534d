import { createRouterTransport } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { claimedJobs } from "./fixtures/claimed-jobs.js";
import { SettleStatus, WorkerService } from "./gen/taskq/v1/worker_pb.js";
import { Slots } from "./slots.js";
import { Worker } from "./worker.js";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A gateway that answers each poll when the test says so, with as many jobs as it asked for, and
 * records when each poll arrived and what it asked for.
 */
function heldGateway() {
  let nextId = 1;
  const polls: { at: number; maxJobs: number; answer: () => void }[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(WorkerService, {
      async *claim(requests) {
        for await (const req of requests) {
          let answer = () => {};
          const answered = new Promise<void>((r) => {
            answer = r;
          });
          polls.push({ at: performance.now(), maxJobs: req.maxJobs, answer });
          await answered;
          const jobs = claimedJobs(req.maxJobs, nextId);
          nextId += req.maxJobs;
          yield { jobs };
        }
      },
      async *settle(requests) {
        for await (const req of requests)
          yield { results: req.settlements.map((s) => ({ lease: s.lease, status: SettleStatus.ACCEPTED })) };
      },
      async *heartbeat(requests) {
        for await (const req of requests) yield { leases: req.leases.map((lease) => ({ lease })) };
      },
    });
  });
  return { transport, polls };
}

async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await pause(2);
  }
}

describe("a busy worker polls for batches", () => {
  let worker: Worker | undefined;
  afterEach(async () => {
    await worker?.stop({ graceMs: 0 });
    worker = undefined;
  });

  /** A worker of 8 slots whose handlers finish when `finish()` says; the first poll fills every slot. */
  async function busyWorker(pollBatchWaitMs: number) {
    const gw = heldGateway();
    const running: (() => void)[] = [];
    worker = new Worker({
      transport: gw.transport,
      queues: ["q"],
      concurrency: 8,
      // The batch is of handler slots: a worker that holds nothing ahead shows it plainly.
      prefetch: 0,
      pollBatchWaitMs,
      handler: () =>
        new Promise<void>((r) => {
          running.push(r);
        }),
    });
    await worker.start();
    await until(() => gw.polls.length === 1);
    gw.polls[0]?.answer();
    await until(() => running.length === 8);
    const finish = () => running.shift()?.();
    return { gw, finish };
  }

  it("waits for a quarter of its slots to free before the next poll, and asks for them", async () => {
    const { gw, finish } = await busyWorker(1_000);
    finish();
    await pause(150);
    // One slot of 8 free: below a quarter, so no poll yet.
    expect(gw.polls).toHaveLength(1);
    finish();
    await until(() => gw.polls.length === 2);
    expect(gw.polls[1]?.maxJobs).toBe(2);
  });

  /** Frees one slot of a full worker; how long until its next poll, and what that poll asks for. */
  async function nextPollAfterOneFrees(pollBatchWaitMs: number) {
    const { gw, finish } = await busyWorker(pollBatchWaitMs);
    const freed = performance.now();
    finish();
    await until(() => gw.polls.length === 2);
    return { waited: (gw.polls[1]?.at ?? 0) - freed, maxJobs: gw.polls[1]?.maxJobs };
  }

  it("polls for what is free once pollBatchWaitMs has passed", async () => {
    const { waited, maxJobs } = await nextPollAfterOneFrees(200);
    expect(waited).toBeGreaterThanOrEqual(190);
    expect(waited).toBeLessThan(2_000);
    expect(maxJobs).toBe(1);
  });

  it("polls as soon as one slot frees with pollBatchWaitMs 0", async () => {
    const { waited, maxJobs } = await nextPollAfterOneFrees(0);
    expect(waited).toBeLessThan(150);
    expect(maxJobs).toBe(1);
  });

  it("refuses a pollBatchWaitMs outside 0 to 1000", () => {
    const transport = heldGateway().transport;
    for (const pollBatchWaitMs of [-1, 1001])
      expect(
        () => new Worker({ transport, queues: ["q"], handler: async () => {}, pollBatchWaitMs }),
      ).toThrow(/pollBatchWaitMs must be 0 to 1000/);
  });
});

describe("Slots.waitFreeAtLeast", () => {
  it("returns at once when enough slots are free, waits for them otherwise, and gives up after its time", async () => {
    const slots = new Slots(4);
    const signal = new AbortController().signal;
    let t = performance.now();
    expect(await slots.waitFreeAtLeast(2, 1_000, signal)).toBe(true);
    expect(performance.now() - t).toBeLessThan(50);

    slots.acquire(4);
    t = performance.now();
    setTimeout(() => slots.release(1), 20);
    setTimeout(() => slots.release(1), 60);
    expect(await slots.waitFreeAtLeast(2, 5_000, signal)).toBe(true);
    expect(slots.free).toBe(2);
    expect(performance.now() - t).toBeGreaterThanOrEqual(55);
    expect(performance.now() - t).toBeLessThan(2_000);

    slots.acquire(2);
    t = performance.now();
    expect(await slots.waitFreeAtLeast(1, 80, signal)).toBe(true);
    expect(slots.free).toBe(0);
    expect(performance.now() - t).toBeGreaterThanOrEqual(75);
  });

  it("resolves false when its signal aborts", async () => {
    const slots = new Slots(2);
    slots.acquire(2);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    expect(await slots.waitFreeAtLeast(1, 5_000, ac.signal)).toBe(false);
  });
});
