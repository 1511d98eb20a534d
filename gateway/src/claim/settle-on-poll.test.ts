import { status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { QueueStore } from "../store/queue-store.js";
import type { Store } from "../store/store.js";
import type { ClaimedJob, Settlement } from "../store/types.js";
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

const success = (j: ClaimedJob): Settlement => ({
  jobId: j.id,
  attempt: j.attempt,
  durationMs: 1,
  kind: "success",
  result: new Uint8Array(),
});

for (const engine of engines) {
  describe.skipIf(!engine.available())(
    `a poll settles the jobs it carries, then claims (${engine.name})`,
    () => {
      let handle: Awaited<ReturnType<(typeof engine)["open"]>>;
      let store: Store;
      let queues: QueueStore;
      let waiters: Waiters<Poll, Handed>;
      let claimer: Claimer;
      let round = 0;
      beforeAll(async () => {
        handle = await engine.open();
        ({ store, queues, waiters, claimer } = testClaimer(handle.db));
      });
      afterAll(() => handle.close());

      const queue = () => `settle-on-poll-${++round}`;
      const poll = (q: string, over: Partial<Poll> = {}) =>
        claimer.poll(
          { queues: [q], maxJobs: 1, maxWaitMs: 0, workerId: "w", leaseMs: 30_000, ...over },
          new AbortController().signal,
        );

      it("applies the settlements, then claims, and answers their results in order", async () => {
        const q = queue();
        await store.jobsEnqueue([newJob(q), newJob(q), newJob(q)]);
        const first = (await poll(q, { maxJobs: 2 })).jobs;
        expect(first).toHaveLength(2);
        const res = await poll(q, { settlements: first.map(success) });
        expect(res.jobs).toHaveLength(1);
        expect(res.settled?.map((o) => [o.jobId, o.status, o.state])).toEqual(
          first.map((j) => [j.id, "accepted", "succeeded"]),
        );
        const next = await store.jobGet(res.jobs[0]?.id ?? "");
        for (const j of first) {
          const done = await store.jobGet(j.id);
          expect(done?.state).toBe("succeeded");
          expect(done?.finishedAt?.getTime()).toBeLessThanOrEqual(next?.startedAt?.getTime() ?? 0);
        }
      });

      it("classifies each settlement as a Settle request does: repeat, conflict, lost lease, unknown job", async () => {
        const q = queue();
        await store.jobsEnqueue([newJob(q)]);
        const [job] = (await poll(q)).jobs;
        if (!job) throw new Error("no job claimed");
        await poll(q, { settlements: [success(job)] });
        const res = await poll(q, {
          settlements: [
            success(job),
            { jobId: job.id, attempt: job.attempt, durationMs: null, kind: "cancel", reason: "" },
            { ...success(job), attempt: job.attempt + 1 },
            { ...success(job), jobId: "999999999" },
          ],
        });
        expect(res.settled?.map((o) => [o.jobId, o.status])).toEqual([
          [job.id, "accepted"],
          [job.id, "conflict"],
          [job.id, "lease_lost"],
          ["999999999", "not_found"],
        ]);
      });

      it("is answered at once when it claims nothing, however long it may wait", async () => {
        const q = queue();
        await store.jobsEnqueue([newJob(q)]);
        const [job] = (await poll(q)).jobs;
        if (!job) throw new Error("no job claimed");
        const started = Date.now();
        const res = await poll(q, { maxWaitMs: 20_000, settlements: [success(job)] });
        expect(Date.now() - started).toBeLessThan(5_000);
        expect(res.jobs).toEqual([]);
        expect(res.settled?.map((o) => o.status)).toEqual(["accepted"]);
        expect(waiters.parked).toBe(0);
      });

      it("settles before it claims on a queue claimed alone: the settled job's room under max_running is free", async () => {
        const q = queue();
        await knownQueues(handle.db, q);
        await queues.queueSetConcurrency(q, 1, ACTOR);
        await store.jobsEnqueue([newJob(q), newJob(q)]);
        const [job] = (await poll(q)).jobs;
        if (!job) throw new Error("no job claimed");
        expect((await poll(q)).verdicts.map((v) => v.reason)).toEqual(["MAX_RUNNING"]);
        const res = await poll(q, { settlements: [success(job)] });
        expect(res.settled?.map((o) => o.status)).toEqual(["accepted"]);
        expect(res.jobs).toHaveLength(1);
        expect(res.verdicts).toEqual([]);
      });

      it("still settles when a Redis gate declines the poll's only queue before it reaches Postgres", async () => {
        const q = queue();
        await queues.queueEnsure(q, { claim_rate_per_minute: 1, claim_burst: 1 }, ACTOR);
        await store.jobsEnqueue([newJob(q), newJob(q)]);
        const [job] = (await poll(q)).jobs;
        if (!job) throw new Error("no job claimed");
        const res = await poll(q, { settlements: [success(job)] });
        expect(res.verdicts.map((v) => v.reason)).toEqual(["RATE_LIMIT"]);
        expect(res.settled?.map((o) => o.status)).toEqual(["accepted"]);
        expect((await store.jobGet(job.id))?.state).toBe("succeeded");
      });

      it("gives each of two polls merged into one statement its own results", async () => {
        const q = queue();
        await store.jobsEnqueue([1, 2, 3, 4].map(() => newJob(q)));
        const [a, b] = (await poll(q, { maxJobs: 2 })).jobs;
        if (!a || !b) throw new Error("not claimed");
        const [ra, rb] = await Promise.all([
          poll(q, { settlements: [success(a)], workerId: "wa" }),
          poll(q, { settlements: [success(b), { ...success(b), attempt: 9 }], workerId: "wb" }),
        ]);
        expect(ra.settled?.map((o) => [o.jobId, o.status])).toEqual([[a.id, "accepted"]]);
        expect(rb.settled?.map((o) => [o.jobId, o.status])).toEqual([
          [b.id, "accepted"],
          [b.id, "lease_lost"],
        ]);
        expect([...ra.jobs, ...rb.jobs]).toHaveLength(2);
      });

      it("keeps the settlements when its claim fails: sent again, they are answered as the first time", async () => {
        const q = queue();
        await store.jobsEnqueue([newJob(q), newJob(q)]);
        const [job] = (await poll(q)).jobs;
        if (!job) throw new Error("no job claimed");
        // A lease Postgres cannot store makes the claim fail, after the settle.
        await expect(poll(q, { settlements: [success(job)], leaseMs: 2 ** 31 })).rejects.toThrow();
        expect((await store.jobGet(job.id))?.state).toBe("succeeded");
        const again = await poll(q, { settlements: [success(job)] });
        expect(again.settled?.map((o) => o.status)).toEqual(["accepted"]);
        expect((await store.jobGet(job.id))?.state).toBe("succeeded");
      });
    },
  );
}

// Through a gateway, as a worker in any language sees it: plain grpc-js stubs.
describe("settlements on a Claim poll, through a gateway", () => {
  const setup = gatewayWithStubs({ engine: "pglite" });
  const q = "settle-on-poll-grpc";

  it("answers settle_results in the poll's response; a bad settlement fails the poll and writes nothing", async () => {
    const { stubs } = setup;
    await unary(stubs.producer, "EnqueueBatch", {
      jobs: [1, 2].map(() => ({ queue: q, payload: Buffer.from("{}") })),
    });
    const stream = duplex(stubs.worker, "Claim");
    const ask = { queues: [q], max_jobs: 1, max_wait: seconds(5), worker_id: "w-grpc" };
    const [job] = (await stream.send(ask)).jobs;
    const lease = { job_id: job.id, attempt: job.attempt };
    const res = await stream.send({
      ...ask,
      settlements: [{ lease, success: { result: Buffer.from("ok") } }],
    });
    stream.end();
    expect(res.settle_results).toMatchObject([
      { lease, status: "SETTLE_STATUS_ACCEPTED", state: "JOB_STATE_SUCCEEDED" },
    ]);
    expect(res.jobs).toHaveLength(1);
    const next = res.jobs[0];

    const bad = duplex(stubs.worker, "Claim");
    const refused = bad.send({
      ...ask,
      settlements: [{ lease: { job_id: next.id, attempt: next.attempt }, success: {} }, { lease }],
    });
    await expect(refused).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining("settlements[1].outcome"),
    });
    const { job: still } = await unary(stubs.producer, "GetJob", { job_id: next.id });
    expect(still.state).toBe("JOB_STATE_RUNNING");
  });
});
