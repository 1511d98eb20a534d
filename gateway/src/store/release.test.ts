import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines, knownQueues } from "../testing/services.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";
import { Store } from "./store.js";
import type { ClaimedJob, Settlement } from "./types.js";

const ACTOR = "operator:test";

// A Released settlement: the worker never started the job (it held it ahead of a free slot) and gives
// it back. Checked on both engines, keeping finished jobs and deleting them (retention 0).
for (const engine of engines) {
  for (const deleteFinished of [false, true]) {
    describe.skipIf(!engine.available())(
      `a released job on ${engine.name}, deleteFinished ${deleteFinished}`,
      () => {
        let db: Db;
        let close: () => Promise<void>;
        let store: Store;
        let queues: QueueStore;
        beforeAll(async () => {
          ({ db, close } = await engine.open());
          store = new Store(db, { deleteFinished });
          queues = new QueueStore(db);
        });
        afterAll(() => close());

        const claim = async (queue: string, limit = 1) => {
          const r = await store.jobsClaimMany({
            queues: [queue],
            polls: [{ limit, leaseMs: 60_000, workerId: "w" }],
          });
          return { jobs: r.jobs[0] ?? [], verdicts: (r.verdicts[0] ?? []).map((v) => v.reason) };
        };
        const claimOne = async (queue: string): Promise<ClaimedJob> => {
          const [j] = (await claim(queue)).jobs;
          if (!j) throw new Error(`nothing claimed from ${queue}`);
          return j;
        };
        const release = (j: ClaimedJob): Settlement => ({
          jobId: j.id,
          attempt: j.attempt,
          kind: "release",
          reason: "queue paused",
        });
        const fail = (j: ClaimedJob): Settlement => ({
          jobId: j.id,
          attempt: j.attempt,
          kind: "failure",
          error: { type: "Boom", message: "down", retryable: true },
          delayMs: 0,
        });

        const breaker = async (queue: string) => {
          const [row] = await db.query<{ breaker_state: string; breaker_probe_job_id: string | null }>(
            {
              name: "",
              text: "select breaker_state, breaker_probe_job_id::text from taskq.queues where name = $1",
            },
            [queue],
          );
          return row;
        };

        it("is ready again at once, first in line, with its attempt uncounted", async () => {
          const q = "place";
          const [first, second] = await store.jobsEnqueue([
            newJob(q, { maxAttempts: 2 }),
            newJob(q, { maxAttempts: 2 }),
          ]);
          const held = await claimOne(q);
          expect(held.id).toBe(first?.id);
          const [answer] = await store.jobsSettle([release(held)]);
          expect(answer).toMatchObject({ status: "accepted", state: "queued", queue: q });
          expect(await store.jobGet(held.id)).toMatchObject({
            state: "queued",
            attempt: 1,
            maxAttempts: 3,
            startedAt: null,
            workerId: null,
            finishedAt: null,
            outcome: null,
          });
          // Its place: still ahead of the job enqueued after it.
          const again = await claimOne(q);
          expect(again).toMatchObject({ id: first?.id, attempt: 2 });
          // Two real attempts for a job of max_attempts 2: this failure is retried, the next one ends it.
          expect((await store.jobsSettle([fail(again)]))[0]).toMatchObject({ state: "queued" });
          const rest = (await claim(q, 2)).jobs;
          expect(rest.map((j) => [j.id, j.attempt])).toEqual([
            [second?.id, 1],
            [first?.id, 3],
          ]);
          expect((await store.jobsSettle(rest.filter((j) => j.id === first?.id).map(fail)))[0]).toMatchObject(
            {
              state: "failed",
            },
          );
        });

        it("fences the released attempt: its settles and heartbeats find the lease lost; a repeat is accepted", async () => {
          const q = "fence";
          await store.jobsEnqueue([newJob(q)]);
          const held = await claimOne(q);
          await store.jobsSettle([release(held)]);
          const success: Settlement = {
            jobId: held.id,
            attempt: held.attempt,
            kind: "success",
            result: new Uint8Array(),
          };
          expect((await store.jobsSettle([success]))[0]?.status).toBe("lease_lost");
          expect((await store.jobsSettle([release(held)]))[0]).toMatchObject({
            status: "accepted",
            state: "queued",
          });
          expect(
            (await store.leasesExtend([{ jobId: held.id, attempt: held.attempt, extendMs: null }]))[0],
          ).toMatchObject({ state: "lease_lost" });
          // Claimed again by another worker: the old attempt's settle still cannot touch it.
          const next = await claimOne(q);
          expect((await store.jobsSettle([success]))[0]?.status).toBe("lease_lost");
          expect(await store.jobGet(next.id)).toMatchObject({ state: "running", attempt: 2 });
        });

        it("frees its max_running place at once", async () => {
          const q = "capped";
          await knownQueues(db, q);
          await queues.queueSetConcurrency(q, 1, ACTOR);
          await store.jobsEnqueue([newJob(q), newJob(q)]);
          const held = await claimOne(q);
          expect(await claim(q)).toMatchObject({ jobs: [], verdicts: ["MAX_RUNNING"] });
          await store.jobsSettle([release(held)]);
          expect((await claim(q)).jobs).toHaveLength(1);
        });

        it("counts for the breaker as neither success nor failure; a released probe frees the probe slot", async () => {
          const q = "breaker";
          await knownQueues(db, q);
          await queues.breakerConfig(q, 2, 1, 1, ACTOR);
          await store.jobsEnqueue(Array.from({ length: 4 }, () => newJob(q)));
          // Failure, release, failure: a streak of 2 (the release did not reset it) opens the breaker.
          await store.jobsSettle([fail(await claimOne(q))]);
          await store.jobsSettle([release(await claimOne(q))]);
          expect(await breaker(q)).toEqual({ breaker_state: "closed", breaker_probe_job_id: null });
          await store.jobsSettle([fail(await claimOne(q))]);
          expect((await breaker(q))?.breaker_state).toBe("open");
          // After the 1 s cooldown one probe is handed out; released, the slot is free for the next claim.
          await new Promise((r) => setTimeout(r, 1_100));
          const probe = await claimOne(q);
          expect(await claim(q)).toMatchObject({ jobs: [], verdicts: ["BREAKER_PROBING"] });
          await store.jobsSettle([release(probe)]);
          const [row] = await db.query<{ breaker_state: string; breaker_probe_job_id: string | null }>(
            {
              name: "",
              text: "select breaker_state, breaker_probe_job_id::text from taskq.queues where name = $1",
            },
            [q],
          );
          expect(row).toEqual({ breaker_state: "half_open", breaker_probe_job_id: null });
          expect((await claim(q)).jobs).toHaveLength(1);
        });

        it("is cancelled instead when a cancel was requested while it was held", async () => {
          const q = "cancel";
          await store.jobsEnqueue([newJob(q)]);
          const held = await claimOne(q);
          await store.jobCancel(held.id, "not needed");
          expect((await store.jobsSettle([release(held)]))[0]).toMatchObject({
            status: "accepted",
            state: "cancelled",
          });
          if (!deleteFinished)
            expect(await store.jobGet(held.id)).toMatchObject({ state: "cancelled", outcome: "cancelled" });
          expect((await claim(q)).jobs).toEqual([]);
        });
      },
    );
  }
}
