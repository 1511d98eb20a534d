import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines, knownQueues } from "../testing/services.js";
import { testClaimer } from "../testing/test-claimer.js";
import type { Poll } from "./poll-loop.js";

const ACTOR = "operator:test";

// A poll that says its free handler slots (ClaimRequest concurrency with max_jobs - prefetch): a queue
// whose gates count claimed jobs is handed only that many, first in the answer; other queues fill the
// rest of max_jobs, which the worker may buffer.
for (const engine of engines) {
  describe.skipIf(!engine.available())(`a poll's free slots (${engine.name})`, () => {
    let handle: Awaited<ReturnType<(typeof engine)["open"]>>;
    let t: ReturnType<typeof testClaimer>;
    beforeAll(async () => {
      handle = await engine.open();
      t = testClaimer(handle.db);
    });
    afterAll(() => handle.close());

    const poll = (queues: string[], over: Partial<Poll> = {}): Poll => ({
      queues,
      maxJobs: 10,
      maxWaitMs: 0,
      workerId: "w",
      leaseMs: 60_000,
      ...over,
    });
    const enqueue = (queue: string, n: number) =>
      t.store.jobsEnqueue(Array.from({ length: n }, () => newJob(queue)));

    it("a max_running queue gets at most the free slots, first in the answer; a plain queue's jobs follow", async () => {
      await knownQueues(handle.db, "capped", "plain");
      await enqueue("capped", 10);
      await enqueue("plain", 4);
      await t.queues.queueSetConcurrency("capped", 100, ACTOR);
      const res = await t.claimer.poll(
        poll(["plain", "capped"], { freeSlots: 3 }),
        new AbortController().signal,
      );
      expect(res.jobs.map((j) => j.queue)).toEqual([...Array(3).fill("capped"), ...Array(4).fill("plain")]);
    });

    it("without free slots a gated queue gets nothing, and the poll is answered at once though it may wait", async () => {
      await knownQueues(handle.db, "throttled-share");
      await enqueue("throttled-share", 5);
      await t.queues.queueSetConcurrency("throttled-share", 100, ACTOR);
      const started = performance.now();
      const res = await t.claimer.poll(
        poll(["throttled-share"], { freeSlots: 0, maxWaitMs: 5_000 }),
        new AbortController().signal,
      );
      expect(res.jobs).toEqual([]);
      expect(performance.now() - started).toBeLessThan(2_000);
      // With free slots, it is claimed.
      const next = await t.claimer.poll(
        poll(["throttled-share"], { freeSlots: 2 }),
        new AbortController().signal,
      );
      expect(next.jobs).toHaveLength(2);
    });

    it("a queue with a breaker, even closed, gets at most the free slots: a trip must not find jobs buffered", async () => {
      await knownQueues(handle.db, "guarded");
      await enqueue("guarded", 10);
      await t.queues.breakerConfig("guarded", 5, 30, 1, ACTOR);
      const res = await t.claimer.poll(poll(["guarded"], { freeSlots: 2 }), new AbortController().signal);
      expect(res.jobs).toHaveLength(2);
    });

    it("a poll that does not say its slots is handed up to max_jobs of a gated queue, as before", async () => {
      await knownQueues(handle.db, "unsaid");
      await enqueue("unsaid", 10);
      await t.queues.queueSetConcurrency("unsaid", 100, ACTOR);
      const res = await t.claimer.poll(poll(["unsaid"], { maxJobs: 6 }), new AbortController().signal);
      expect(res.jobs).toHaveLength(6);
    });

    it("a plain queue is not capped by the free slots: the rest may be buffered", async () => {
      await knownQueues(handle.db, "plain-only");
      await enqueue("plain-only", 10);
      const res = await t.claimer.poll(
        poll(["plain-only"], { maxJobs: 8, freeSlots: 0 }),
        new AbortController().signal,
      );
      expect(res.jobs).toHaveLength(8);
    });
  });
}
