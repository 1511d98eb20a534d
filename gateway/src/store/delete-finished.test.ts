import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";
import { Store } from "./store.js";
import type { ClaimedJob, Settlement } from "./types.js";

// A gateway with retentionSeconds 0 keeps no finished job: the settle that finishes a job deletes it
// (one write instead of an update now and a delete at the next maintenance tick). A retry still waits
// in the table, the settle answers as when the job is kept, and the breaker still counts it.
const ask = (queue: string, limit: number) => ({ queues: [queue], limit, leaseMs: 60_000, workerId: "w" });
const success = (c: ClaimedJob): Settlement => ({
  jobId: c.id,
  attempt: c.attempt,
  kind: "success",
  result: new Uint8Array([1]),
});
const failure = (c: ClaimedJob, delayMs: number | null): Settlement => ({
  jobId: c.id,
  attempt: c.attempt,
  kind: "failure",
  error: { type: "E", message: "m", retryable: delayMs !== null },
  delayMs,
});
const cancel = (c: ClaimedJob): Settlement => ({
  jobId: c.id,
  attempt: c.attempt,
  kind: "cancel",
  reason: "r",
});

for (const engine of engines) {
  describe.skipIf(!engine.available())(`settles that delete finished jobs, on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let store: Store;
    let n = 0;
    const queue = () => `deleted-${++n}`;
    /** `count` jobs of a new queue with `maxAttempts`, claimed. */
    const claimed = async (count: number, maxAttempts = 3) => {
      const q = queue();
      await store.jobsEnqueue(Array.from({ length: count }, () => newJob(q, { maxAttempts })));
      const jobs = await store.jobsClaim(ask(q, count));
      expect(jobs).toHaveLength(count);
      return { q, jobs };
    };
    const stored = async (jobs: readonly ClaimedJob[]) =>
      Promise.all(jobs.map(async (j) => (await store.jobGet(j.id))?.state ?? null));

    beforeAll(async () => {
      ({ db, close } = await engine.open());
      store = new Store(db, { deleteFinished: true });
    });
    afterAll(() => close());

    it("deletes the jobs a success, a cancel or a last failure finishes, and keeps a retry", async () => {
      const { jobs } = await claimed(5, 2);
      const [ok, cancelled, fatal, retried, soon] = jobs as [
        ClaimedJob,
        ClaimedJob,
        ClaimedJob,
        ClaimedJob,
        ClaimedJob,
      ];
      const out = await store.jobsSettle([
        success(ok),
        cancel(cancelled),
        failure(fatal, null),
        failure(retried, 60_000),
        failure(soon, 0),
      ]);
      expect(out.map((o) => [o.status, o.state])).toEqual([
        ["accepted", "succeeded"],
        ["accepted", "cancelled"],
        ["accepted", "failed"],
        ["accepted", "scheduled"],
        ["accepted", "queued"],
      ]);
      expect(out[3]?.nextRunAt).toBeInstanceOf(Date);
      expect(await stored(jobs)).toEqual([null, null, null, "scheduled", "queued"]);
    });

    it("deletes a job whose failure spent its last attempt, retryable or not", async () => {
      const { q, jobs } = await claimed(1, 2);
      const [first] = jobs as [ClaimedJob];
      expect((await store.jobsSettle([failure(first, 0)]))[0]?.state).toBe("queued");
      const [second] = (await store.jobsClaim(ask(q, 1))) as [ClaimedJob];
      expect(second.attempt).toBe(2);
      expect((await store.jobsSettle([failure(second, 0)]))[0]).toMatchObject({
        status: "accepted",
        state: "failed",
      });
      expect(await stored([second])).toEqual([null]);
    });

    it("answers a settle repeated after the delete as for a job it cannot find", async () => {
      const { jobs } = await claimed(1);
      const [job] = jobs as [ClaimedJob];
      expect((await store.jobsSettle([success(job)]))[0]?.status).toBe("accepted");
      expect((await store.jobsSettle([success(job)]))[0]?.status).toBe("not_found");
    });

    it("refuses a stale attempt and changes nothing", async () => {
      const { jobs } = await claimed(1);
      const [job] = jobs as [ClaimedJob];
      const out = await store.jobsSettle([{ ...success(job), attempt: job.attempt + 1 }]);
      expect(out[0]?.status).toBe("lease_lost");
      expect(await stored([job])).toEqual(["running"]);
    });

    it("still opens the breaker on the failures it deletes", async () => {
      const { q, jobs } = await claimed(2, 1);
      await new QueueStore(db).breakerConfig(q, 2, 60, 1, "test");
      await store.jobsSettle(jobs.map((j) => failure(j, null)));
      expect((await new QueueStore(db).queuesGet([q])).get(q)?.breaker?.state).toBe("open");
      expect(await stored(jobs)).toEqual([null, null]);
    });

    it("keeps finished jobs when not asked to delete them", async () => {
      const kept = new Store(db);
      const q = queue();
      await kept.jobsEnqueue([newJob(q)]);
      const [job] = (await kept.jobsClaim(ask(q, 1))) as [ClaimedJob];
      await kept.jobsSettle([success(job)]);
      expect(await stored([job])).toEqual(["succeeded"]);
      expect((await kept.jobsSettle([success(job)]))[0]?.status).toBe("accepted");
    });
  });
}
