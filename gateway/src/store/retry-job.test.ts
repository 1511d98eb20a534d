import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from "../errors.js";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";
import { ScheduleStore } from "./schedule-store.js";
import { Store } from "./store.js";
import type { ClaimedJob, Settlement } from "./types.js";

// taskq.retry_job: one failed job ready again now, by the rule redrive_failed uses (taskq.redrive_jobs),
// wherever the failed job is: in taskq.job_history, or still in taskq.live_jobs (an idempotency key keeps
// it there until the maintenance leader's next move).

const fail = (c: ClaimedJob): Settlement => ({
  jobId: c.id,
  attempt: c.attempt,
  kind: "failure",
  error: { type: "Boom", message: "down", retryable: false },
  delayMs: null,
});
const succeed = (c: ClaimedJob): Settlement => ({
  jobId: c.id,
  attempt: c.attempt,
  kind: "success",
  result: new Uint8Array([1]),
});

for (const engine of engines) {
  describe.skipIf(!engine.available())(`retry_job on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let store: Store;
    let verbs: ScheduleStore;
    let queues: QueueStore;
    let n = 0;
    const queue = () => `retry-${++n}`;
    const claim = (q: string) => store.jobsClaim({ queues: [q], limit: 10, leaseMs: 60_000, workerId: "w" });
    const table = async (id: string) => {
      const [row] = await db.query<{ t: string }>(
        {
          name: "",
          text: `select 'live' as t from taskq.live_jobs where id = $1::bigint
                 union all select 'history' from taskq.job_history where id = $1::bigint`,
        },
        [id],
      );
      return row?.t ?? "nowhere";
    };
    /** A job of `q` that failed for good on its first attempt (of 2). */
    const failedJob = async (q: string, idempotencyKey?: string) => {
      await store.jobsEnqueue([newJob(q, { maxAttempts: 2, ...(idempotencyKey ? { idempotencyKey } : {}) })]);
      const [c] = await claim(q);
      if (!c) throw new Error("nothing claimed");
      await store.jobsSettle([fail(c)]);
      return c.id;
    };

    beforeAll(async () => {
      ({ db, close } = await engine.open());
      store = new Store(db);
      verbs = new ScheduleStore(db);
      queues = new QueueStore(db);
    });
    afterAll(() => close());

    it("a failed job in the history is back, ready now with its budget again, runs and succeeds; audited", async () => {
      const q = queue();
      const id = await failedJob(q);
      expect(await table(id)).toBe("history");
      expect(await verbs.jobRetry(id, "operator:test")).toBe(q);
      expect(await table(id)).toBe("live");
      expect(await store.jobGet(id)).toMatchObject({ state: "queued", attempt: 1, maxAttempts: 3 });
      const [again, ...more] = await claim(q);
      expect(more).toEqual([]);
      expect(again).toMatchObject({ id, attempt: 2 });
      if (!again) throw new Error("nothing claimed");
      await store.jobsSettle([succeed(again)]);
      expect(await store.jobGet(id)).toMatchObject({ state: "succeeded", attempt: 2 });
      const [audit, ...older] = await queues.auditList(q, 50, null);
      expect(older).toEqual([]);
      expect(audit).toMatchObject({
        event_type: "job.retry",
        actor: "operator:test",
        detail: {
          before: { job_id: id, state: "failed", attempt: 1 },
          after: { job_id: id, state: "queued" },
        },
      });
    });

    it("a failed job still in the live table is retried in place", async () => {
      const q = queue();
      const id = await failedJob(q, "key-1");
      expect(await table(id)).toBe("live");
      expect(await store.jobGet(id)).toMatchObject({ state: "failed" });
      await verbs.jobRetry(id, "operator:test");
      expect(await store.jobGet(id)).toMatchObject({ state: "queued", attempt: 1, maxAttempts: 3 });
      expect((await claim(q)).map((c) => [c.id, c.attempt])).toEqual([[id, 2]]);
      expect(await queues.auditList(q, 50, null)).toHaveLength(1);
    });

    it("refuses a job that is not failed, saying its state; an unknown job is not found; bad input writes nothing", async () => {
      const q = queue();
      await store.jobsEnqueue([newJob(q)]);
      const [queued] = await store.jobsEnqueue([newJob(q)]);
      const [running] = await claim(q).then((cs) => cs.slice(0, 1));
      if (!running || !queued) throw new Error("setup");
      await expect(verbs.jobRetry(running.id, "operator:test")).rejects.toThrow(
        new FailedPreconditionError(
          `job ${running.id} is running, not failed: only a failed job can be retried`,
        ),
      );
      await store.jobsSettle([succeed(running)]);
      await expect(verbs.jobRetry(running.id, "operator:test")).rejects.toThrow(/is succeeded, not failed/);
      await expect(verbs.jobRetry("9123456789", "operator:test")).rejects.toThrow(
        new NotFoundError("job 9123456789 not found"),
      );
      const id = await failedJob(q);
      for (const [jobId, actor, field] of [
        ["0", "operator:test", "job_id"],
        ["-3", "operator:test", "job_id"],
        ["1.5", "operator:test", "job_id"],
        [id, "", "actor"],
      ] as const) {
        const err = await verbs.jobRetry(jobId, actor).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).field).toBe(field);
      }
      expect(await store.jobGet(id)).toMatchObject({ state: "failed" });
      expect(await queues.auditList(q, 50, null)).toEqual([]);
    });

    it("on psql: an operator retries a job, an observer may not, and nobody calls the shared rule itself", async () => {
      const as = (role: string, text: string) =>
        db.transaction(async (tx) => {
          await tx.query({ name: "", text: `set local role ${role}` });
          return tx.query<Record<string, unknown>>({ name: "", text });
        });
      const code = (p: Promise<unknown>) =>
        p.then(
          () => "allowed",
          (err: { code?: string }) => err.code,
        );
      const q = queue();
      const id = await failedJob(q);
      for (const [role, text] of [
        ["taskq_observer", `select taskq.retry_job(${id}, 'eve')`],
        ["taskq_operator", `select * from taskq.redrive_jobs(array[${id}]::bigint[], 0, now())`],
      ] as const) {
        expect(await code(as(role, text)), `${role}: ${text}`).toBe("42501");
      }
      expect(await store.jobGet(id)).toMatchObject({ state: "failed" });
      expect(await as("taskq_operator", `select taskq.retry_job(${id}, 'carol') as queue`)).toEqual([
        { queue: q },
      ]);
      expect(await store.jobGet(id)).toMatchObject({ state: "queued" });
    });
  });
}
