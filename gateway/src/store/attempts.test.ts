import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines, knownQueues } from "../testing/services.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";
import { Store } from "./store.js";
import type { AttemptRecord, ClaimedJob, JobRecord, Settlement } from "./types.js";

// Attempt history: each attempt that does not succeed is kept by the statement that ends it (a settle,
// an undelivered claim given back, the lease rescue), none is written for a success, and retention
// removes a job's attempts with the job. Every time is pinned, so each row's times are exact.
const T0 = new Date("2030-01-01T00:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const claimAsk = (queue: string, workerId: string) => ({
  queues: [queue],
  limit: 1,
  leaseMs: 30_000,
  workerId,
});
const failure = (c: ClaimedJob, message: string, delayMs: number | null): Settlement => ({
  jobId: c.id,
  attempt: c.attempt,
  kind: "failure",
  error: { type: "Boom", message, retryable: delayMs !== null },
  delayMs,
});
const success = (c: ClaimedJob): Settlement => ({
  jobId: c.id,
  attempt: c.attempt,
  kind: "success",
  result: new Uint8Array([1]),
});

for (const engine of engines) {
  describe.skipIf(!engine.available())(`attempt history on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let store: Store;
    let deleting: Store;
    let n = 0;
    const queue = () => `attempts-${++n}`;

    beforeAll(async () => {
      ({ db, close } = await engine.open());
      store = new Store(db);
      deleting = new Store(db, { deleteFinished: true });
    });
    afterAll(() => close());

    /** Enqueues one job at T0 and returns its queue and id. */
    const enqueued = async (s = store, maxAttempts = 5) => {
      const q = queue();
      const [e] = await s.jobsEnqueue([newJob(q, { maxAttempts })], T0);
      return { q, id: e?.id as string };
    };
    const claim = async (q: string, workerId: string, ms: number, s = store) => {
      const [c] = await s.jobsClaim(claimAsk(q, workerId), at(ms));
      if (!c) throw new Error(`nothing claimed from ${q}`);
      return c;
    };
    const job = async (id: string) => (await store.jobGet(id)) as JobRecord;
    const attempts = async (id: string) => store.jobAttempts(await job(id));
    const storedRows = async (id: string) =>
      (
        await db.query<{ n: number }>(
          { name: "", text: "select count(*)::int as n from taskq.job_attempts where job_id = $1::bigint" },
          [id],
        )
      )[0]?.n;

    it("shows a job that failed twice then succeeded as three attempts, the two errors in order", async () => {
      const { q, id } = await enqueued();
      const first = await claim(q, "w1", 1000);
      await store.jobsSettle([failure(first, "database down", 0)], at(1500));
      const second = await claim(q, "w2", 2000);
      await store.jobsSettle([failure(second, "still down", 0)], at(2750));
      const third = await claim(q, "w3", 3000);
      await store.jobsSettle([success(third)], at(3100));

      expect(await attempts(id)).toEqual<AttemptRecord[]>([
        {
          attempt: 1,
          workerId: "w1",
          gateway: null,
          claimedAt: at(1000),
          finishedAt: at(1500),
          outcome: "failed",
          error: { type: "Boom", message: "database down", retryable: true },
          durationMs: 500,
        },
        {
          attempt: 2,
          workerId: "w2",
          gateway: null,
          claimedAt: at(2000),
          finishedAt: at(2750),
          outcome: "failed",
          error: { type: "Boom", message: "still down", retryable: true },
          durationMs: 750,
        },
        {
          attempt: 3,
          workerId: "w3",
          gateway: null,
          claimedAt: at(3000),
          finishedAt: at(3100),
          outcome: "succeeded",
          error: null,
          durationMs: 100,
        },
      ]);
      // The succeeded attempt comes from the job's row: only the two failures are stored.
      expect(await storedRows(id)).toBe(2);
    });

    it("writes no attempt for a success, and shows the running attempt from the job", async () => {
      const { q, id } = await enqueued();
      const c = await claim(q, "w", 1000);
      expect(await attempts(id)).toEqual([
        expect.objectContaining({ attempt: 1, workerId: "w", outcome: "running", finishedAt: null }),
      ]);
      await store.jobsSettle([success(c)], at(1200));
      expect(await storedRows(id)).toBe(0);
      expect((await attempts(id)).map((a) => a.outcome)).toEqual(["succeeded"]);
    });

    it("keeps the worker's duration, a last failure, a cancel and a release", async () => {
      const failed = await enqueued(store, 1);
      const c1 = await claim(failed.q, "w", 1000);
      await store.jobsSettle([{ ...failure(c1, "bad payload", null), durationMs: 42 }], at(2000));
      expect(await attempts(failed.id)).toEqual([
        expect.objectContaining({
          outcome: "failed",
          durationMs: 42,
          error: { type: "Boom", message: "bad payload", retryable: false },
        }),
      ]);

      const cancelled = await enqueued();
      const c2 = await claim(cancelled.q, "w", 1000);
      await store.jobsSettle(
        [{ jobId: c2.id, attempt: c2.attempt, kind: "cancel", reason: "stop" }],
        at(1300),
      );
      expect(await attempts(cancelled.id)).toEqual([
        expect.objectContaining({
          attempt: 1,
          outcome: "cancelled",
          error: { type: "Cancelled", message: "stop", retryable: false },
        }),
      ]);

      // A released job is ready again: the burned attempt is listed, and the next claim's after it.
      const released = await enqueued();
      const c3 = await claim(released.q, "w", 1000);
      await store.jobsSettle(
        [{ jobId: c3.id, attempt: c3.attempt, kind: "release", reason: "full" }],
        at(1100),
      );
      await claim(released.q, "w2", 1200);
      expect((await attempts(released.id)).map((a) => [a.attempt, a.outcome, a.workerId])).toEqual([
        [1, "released", "w"],
        [2, "running", "w2"],
      ]);
    });

    it("keeps a claim given back undelivered as released", async () => {
      const { q, id } = await enqueued();
      const c = await claim(q, "w", 1000);
      await store.jobsRelease([{ jobId: c.id, attempt: c.attempt }]);
      expect(await attempts(id)).toEqual([
        expect.objectContaining({
          attempt: 1,
          outcome: "released",
          workerId: "w",
          error: expect.objectContaining({ type: "Undelivered" }),
          durationMs: null,
        }),
      ]);
    });

    it("keeps an expired lease as lease_expired, with the claim's worker and time", async () => {
      const { q, id } = await enqueued();
      await claim(q, "lost-worker", 1000);
      // The lease is 30 s: rescued at 40 s.
      expect((await store.leasesRescue(100, at(40_000))).count).toBeGreaterThanOrEqual(1);
      expect(await attempts(id)).toEqual<AttemptRecord[]>([
        {
          attempt: 1,
          workerId: "lost-worker",
          gateway: null,
          claimedAt: at(1000),
          finishedAt: at(40_000),
          outcome: "lease_expired",
          error: {
            type: "LeaseExpired",
            message: "lease of attempt 1 expired without a settle",
            retryable: true,
          },
          durationMs: 39_000,
        },
      ]);
    });

    it("writes nothing when a running job is asked to cancel, and keeps the attempt when it ends", async () => {
      const { q, id } = await enqueued();
      await claim(q, "w", 1000);
      expect((await store.jobCancel(id, "not needed", at(2000)))?.cancelRequested).toBe(true);
      expect(await storedRows(id)).toBe(0);
      // The worker never answers: its lease expires, and the job is cancelled.
      await store.leasesRescue(100, at(40_000));
      expect((await job(id)).state).toBe("cancelled");
      expect((await attempts(id)).map((a) => [a.attempt, a.outcome, a.workerId])).toEqual([
        [1, "lease_expired", "w"],
      ]);
    });

    it("keeps an attempt longer than an int of milliseconds (25 days)", async () => {
      const { q, id } = await enqueued();
      await claim(q, "w", 0);
      const days30 = 30 * 86_400_000;
      await store.leasesRescue(100, at(days30));
      expect((await attempts(id)).map((a) => a.durationMs)).toEqual([days30]);
    });

    it("deletes a job's attempts with the job's day of history, and keeps them while the job is kept", async () => {
      const old = await enqueued(store, 1);
      const c1 = await claim(old.q, "w", 1000);
      await store.jobsSettle([failure(c1, "gone", null)], at(2000));
      const day = 86_400_000;
      const recent = await enqueued(store, 1);
      const c2 = await claim(recent.q, "w", 1000);
      await store.jobsSettle([failure(c2, "kept", null)], at(2 * day));
      // Retention 30 s, a minute into the next day (T0 starts a day): the first day (holding the
      // first job) goes, and with it the first job's attempt; the second job, finished later, stays.
      const tick = at(day + 60_000);
      await store.jobHistoryKeep(1000, 30, tick);
      expect(await storedRows(old.id)).toBe(0);
      expect(await storedRows(recent.id)).toBe(1);
      await store.jobHistoryKeep(1000, 86_400, new Date());
    });

    it("with retention 0, keeps no attempt of a job its settle deletes", async () => {
      const retried = await enqueued(deleting);
      const c1 = await claim(retried.q, "w", 1000, deleting);
      await deleting.jobsSettle([failure(c1, "once", 0)], at(1500));
      expect(await storedRows(retried.id)).toBe(1);
      const c2 = await claim(retried.q, "w", 2000, deleting);
      await deleting.jobsSettle([success(c2)], at(2500));
      expect(await deleting.jobGet(retried.id)).toBeNull();
      expect(await storedRows(retried.id)).toBe(0);

      const spent = await enqueued(deleting, 2);
      const c3 = await claim(spent.q, "w", 1000, deleting);
      await deleting.jobsSettle([failure(c3, "one", 0)], at(1500));
      const c4 = await claim(spent.q, "w", 2000, deleting);
      await deleting.jobsSettle([failure(c4, "two", 0)], at(2500));
      expect(await deleting.jobGet(spent.id)).toBeNull();
      expect(await storedRows(spent.id)).toBe(0);
    });

    it("clears a waiting job's attempts with it", async () => {
      const { q, id } = await enqueued();
      await knownQueues(db, q);
      const c = await claim(q, "w", 1000);
      await store.jobsSettle([failure(c, "retry later", 60_000)], at(1500));
      expect(await storedRows(id)).toBe(1);
      expect(await new QueueStore(db).queueClear(q, "operator:test")).toBe(1);
      expect(await storedRows(id)).toBe(0);
    });
  });
}
