import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Profiles } from "../flow/profiles.js";
import type { QueueStore } from "../store/queue-store.js";
import type { Store } from "../store/store.js";
import { gatewayWithStubs } from "../testing/gateway-with-stubs.js";
import { duplex, seconds, unary } from "../testing/grpc-stubs.js";
import { newJob } from "../testing/new-job.js";
import { engines, knownQueues } from "../testing/services.js";
import { testClaimer } from "../testing/test-claimer.js";
import type { Claimer } from "./claimer.js";
import type { Handed } from "./hand-off.js";
import type { Poll } from "./poll-loop.js";
import type { Waiters } from "./waiters.js";

const ACTOR = "operator:test";

for (const engine of engines) {
  describe.skipIf(!engine.available())(
    `an enqueue hands its jobs to polls parked here (${engine.name})`,
    () => {
      let handle: Awaited<ReturnType<(typeof engine)["open"]>>;
      let store: Store;
      let queues: QueueStore;
      let profiles: Profiles;
      let waiters: Waiters<Poll, Handed>;
      let claimer: Claimer;
      let round = 0;
      beforeAll(async () => {
        handle = await engine.open();
        ({ store, queues, profiles, waiters, claimer } = testClaimer(handle.db));
      });
      afterAll(() => handle.close());

      const queue = () => `hand-off-${++round}`;
      /** A poll of `q` parked on the claimer (found nothing, waiting up to 10 s), and its answer to come. */
      async function parked(q: string, over: Partial<Poll> = {}, signal = new AbortController().signal) {
        const before = waiters.parked;
        const poll: Poll = {
          queues: [q],
          maxJobs: 5,
          maxWaitMs: 10_000,
          workerId: "w-parked",
          leaseMs: 30_000,
          ...over,
        };
        const answer = claimer.poll(poll, signal);
        for (let i = 0; waiters.parked === before; i++) {
          if (i > 1000) throw new Error("the poll never parked");
          await new Promise((r) => setTimeout(r, 2));
        }
        return { answer, poll };
      }

      it("claims for the parked poll in the enqueue's own transaction, with the poll's lease and worker id", async () => {
        const q = queue();
        const { answer: poll } = await parked(q);
        const enqueued = await claimer.enqueue([newJob(q), newJob(q), newJob(q)]);
        const res = await poll;
        expect(res.verdicts).toEqual([]);
        expect(res.jobs.map((j) => j.id).sort()).toEqual(enqueued.map((e) => e.id).sort());
        for (const { id } of enqueued) {
          const job = await store.jobGet(id);
          expect(job?.state).toBe("running");
          expect(job?.attempt).toBe(1);
          expect(job?.workerId).toBe("w-parked");
          // One transaction, one now(): claimed in the statement that enqueued it.
          expect(job?.startedAt?.getTime()).toBe(job?.enqueuedAt.getTime());
          expect((job?.leaseDeadline?.getTime() ?? 0) - (job?.startedAt?.getTime() ?? 0)).toBe(30_000);
        }
        expect(waiters.size).toBe(0);
      });

      it("gives a poll no more than its max_jobs and leaves the rest ready", async () => {
        const q = queue();
        const { answer: poll } = await parked(q, { maxJobs: 2 });
        const enqueued = await claimer.enqueue(Array.from({ length: 5 }, () => newJob(q)));
        expect(waiters.parked).toBe(0); // answered by the enqueue, not by a wake-up of its own
        expect((await poll).jobs).toHaveLength(2);
        const states = await Promise.all(enqueued.map(async (e) => (await store.jobGet(e.id))?.state));
        expect(states.filter((s) => s === "queued")).toHaveLength(3);
      });

      it("answers PAUSED for a queue paused while the poll was parked, and leaves the job queued", async () => {
        const q = queue();
        await knownQueues(handle.db, q);
        const { answer: poll } = await parked(q);
        await queues.queuePause(q, ACTOR);
        profiles.clear();
        const [job] = await claimer.enqueue([newJob(q)]);
        expect(waiters.parked).toBe(0);
        expect(await poll).toEqual({
          jobs: [],
          verdicts: [{ queue: q, reason: "PAUSED", retryAfterMs: 1000 }],
        });
        expect((await store.jobGet(job?.id ?? ""))?.state).toBe("queued");
      });

      it("hands nothing to a poll of a throttled queue: its own claim takes one job per slot", async () => {
        const q = queue();
        await knownQueues(handle.db, q);
        const { answer: poll } = await parked(q);
        await queues.queueSetThrottle(q, 1, 60_000, ACTOR);
        profiles.clear();
        const enqueued = await claimer.enqueue([newJob(q), newJob(q), newJob(q)]);
        const states = await Promise.all(enqueued.map(async (e) => (await store.jobGet(e.id))?.state));
        expect(states).toEqual(["queued", "queued", "queued"]);
        // No listener here to pass the enqueue's notification on: wake the poll as it would.
        waiters.wake(q);
        expect((await poll).jobs).toHaveLength(1);
      });

      it("puts the jobs back at once when the poll's caller went away during the enqueue", async () => {
        const q = queue();
        const gone = new AbortController();
        const { answer: poll } = await parked(q, {}, gone.signal);
        const enqueuing = claimer.enqueue([newJob(q), newJob(q)]);
        gone.abort();
        const enqueued = await enqueuing;
        expect((await poll).jobs).toEqual([]);
        for (const { id } of enqueued) {
          const job = await store.jobGet(id);
          expect(job?.state).toBe("queued");
          expect(job?.workerId).toBeNull();
          // Claimed for the poll and put back: the attempt stays burned, and does not count.
          expect(job?.attempt).toBe(1);
          expect(job?.maxAttempts).toBe(6);
        }
        const again = await claimer.poll(
          { queues: [q], maxJobs: 5, maxWaitMs: 0, workerId: "w-next", leaseMs: 30_000 },
          new AbortController().signal,
        );
        expect(again.jobs.map((j) => j.id).sort()).toEqual(enqueued.map((e) => e.id).sort());
      });

      it("still enqueues when the claim part fails, and leaves the poll parked", async () => {
        const q = queue();
        const { answer, poll } = await parked(q);
        // Parked, its lease becomes one Postgres cannot add to a time (integer out of range): the
        // enqueue's claim for it fails.
        poll.leaseMs = 2 ** 31;
        const [job] = await claimer.enqueue([newJob(q)]);
        expect((await store.jobGet(job?.id ?? ""))?.state).toBe("queued");
        expect(waiters.parked).toBe(1);
        poll.leaseMs = 30_000;
        waiters.wake(q);
        expect((await answer).jobs.map((j) => j.id)).toEqual([job?.id]);
      });

      it("does not hand out jobs scheduled for later", async () => {
        const q = queue();
        const gone = new AbortController();
        const { answer: poll } = await parked(q, {}, gone.signal);
        const [later] = await claimer.enqueue([newJob(q, { delayMs: 60_000 })]);
        expect((await store.jobGet(later?.id ?? ""))?.state).toBe("scheduled");
        expect(waiters.parked).toBe(1);
        gone.abort();
        expect((await poll).jobs).toEqual([]);
      });
    },
  );
}

// Through a gateway, as any producer and worker see it: a plain gRPC EnqueueBatch reaches a Claim poll
// parked on the same gateway in its own statement.
describe("hand-off through a gateway", () => {
  const setup = gatewayWithStubs({ engine: "pglite" });

  it("answers a parked Claim poll with the jobs of an EnqueueBatch, claimed when they were enqueued", async () => {
    const { gw, stubs } = setup;
    const claims = async () =>
      (await gw.metrics.claimSeconds.get()).values.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0;
    const before = await claims();
    const stream = duplex(stubs.worker, "Claim");
    const answer = stream.send({
      queues: ["hand-off-grpc"],
      max_jobs: 10,
      max_wait: seconds(20),
      worker_id: "w-grpc",
    });
    // Its first look found nothing; it parks right after.
    while ((await claims()) === before) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 200));
    const { results } = await unary(stubs.producer, "EnqueueBatch", {
      jobs: [1, 2].map(() => ({ queue: "hand-off-grpc", payload: Buffer.from("{}") })),
    });
    const res = await answer;
    stream.end();
    expect(res.jobs.map((j: { id: string }) => j.id).sort()).toEqual(
      results.map((r: { job_id: string }) => r.job_id).sort(),
    );
    for (const { job_id } of results) {
      const { job } = await unary(stubs.producer, "GetJob", { job_id });
      expect(job.worker_id).toBe("w-grpc");
      expect(job.started_at).toEqual(job.enqueued_at);
    }
  });
});
