import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";
import { ScheduleStore } from "./schedule-store.js";
import { Store } from "./store.js";
import type { ClaimedJob, Settlement } from "./types.js";

// Finished jobs leave taskq.live_jobs for taskq.job_history; taskq.jobs is the view over both.
// What readers see of a finished job must not depend on which table holds it.

const lease = 60_000;
const outcomes: Record<string, (c: ClaimedJob) => Settlement> = {
  succeeded: (c) => ({ jobId: c.id, attempt: c.attempt, kind: "success", result: new Uint8Array([7, 8]) }),
  failed: (c) => ({
    jobId: c.id,
    attempt: c.attempt,
    kind: "failure",
    error: { type: "Boom", message: "down", retryable: false },
    delayMs: null,
  }),
  cancelled: (c) => ({ jobId: c.id, attempt: c.attempt, kind: "cancel", reason: "no longer wanted" }),
};

for (const engine of engines) {
  describe.skipIf(!engine.available())(`the history of finished jobs, on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let store: Store;
    let n = 0;
    const queue = () => `history-${++n}`;
    const sql = <T extends object = Record<string, unknown>>(text: string, values: unknown[] = []) =>
      db.query<T>({ name: "", text }, values);
    /** Which table holds each job: "live", "history", or "both" (never right). */
    const where = async (ids: readonly string[]) => {
      const rows = await sql<{ id: string; at: string }>(
        `select id::text as id, string_agg(t, '+' order by t) as at from (
           select id, 'live' as t from taskq.live_jobs union all select id, 'history' from taskq.job_history) x
         where id = any($1::bigint[]) group by id`,
        [ids],
      );
      return ids.map((id) => rows.find((r) => r.id === id)?.at ?? "nowhere");
    };
    const claim = async (q: string, count: number, now?: Date) =>
      store.jobsClaim({ queues: [q], limit: count, leaseMs: lease, workerId: "w1" }, now);
    const readable = async (q: string, id: string) => ({
      job: await store.jobGet(id),
      listed: (await sql<{ id: string }>("select id::text as id from taskq.list_jobs($1, null)", [q])).map(
        (r) => r.id,
      ),
      counted: (await sql<{ n: string }>("select taskq.count_jobs($1, null)::text as n", [q]))[0]?.n,
      counters: await sql(
        `select succeeded_last_minute::int, failed_last_minute::int, succeeded_last_hour::int, failed_last_hour::int
         from taskq.queue_counters where queue = $1`,
        [q],
      ),
      activity: await sql(
        `select sum(claimed)::int as claimed, sum(succeeded)::int as succeeded, sum(failed)::int as failed,
                sum(cancelled)::int as cancelled from taskq.queue_activity($1, 5)`,
        [q],
      ),
    });

    beforeAll(async () => {
      ({ db, close } = await engine.open());
      store = new Store(db);
    });
    afterAll(() => close());

    for (const [state, settle] of Object.entries(outcomes)) {
      it(`a job that ${state} reads the same whether it moved at its settle or finished in place: GetJob, lists, counts, counters, activity`, async () => {
        // A job with an idempotency key finishes in place (as every job did before the history) and moves
        // at the next maintenance tick; one without moves in the settle. Same settle, same reads.
        const q = queue();
        await store.jobsEnqueue([newJob(q), newJob(q, { idempotencyKey: `k-${state}` })]);
        const [moved, inPlace] = (await claim(q, 2)) as [ClaimedJob, ClaimedJob];
        const at = new Date();
        await store.jobsSettle([settle(moved), settle(inPlace)], at);
        expect(await where([moved.id, inPlace.id])).toEqual(["history", "live"]);
        const before = await readable(q, inPlace.id);
        expect(await store.jobsMoveFinished(100)).toBe(1);
        expect(await where([moved.id, inPlace.id])).toEqual(["history", "history"]);
        const after = await readable(q, inPlace.id);
        expect(after).toEqual(before);
        const { id: _m, ...movedFields } = (await store.jobGet(moved.id)) ?? { id: "" };
        const { id: _i, ...inPlaceFields } = after.job ?? { id: "" };
        expect(movedFields).toEqual(inPlaceFields);
        expect(after.job).toMatchObject({ state, attempt: 1, finishedAt: at });
        expect(after.listed).toEqual([inPlace.id, moved.id]);
        expect(after.counted).toBe("2");
        const two = (s: string) => (state === s ? 2 : 0);
        expect(after.activity).toEqual([
          { claimed: 2, succeeded: two("succeeded"), failed: two("failed"), cancelled: two("cancelled") },
        ]);
        expect(after.counters).toEqual([
          {
            succeeded_last_minute: two("succeeded"),
            failed_last_minute: two("failed"),
            succeeded_last_hour: two("succeeded"),
            failed_last_hour: two("failed"),
          },
        ]);
      });
    }

    it("a batch of successes answers each as alone: one that moves, one keyed, one settled before, one of another attempt", async () => {
      // Successes that move take a statement of their own (taskq.jobs_settle); the rest of the batch
      // falls to the whole one.
      const q = queue();
      await store.jobsEnqueue([newJob(q), newJob(q, { idempotencyKey: "k-batch" }), newJob(q)]);
      const [moved, keyed, twice] = (await claim(q, 3)) as [ClaimedJob, ClaimedJob, ClaimedJob];
      const ok = outcomes.succeeded as (c: ClaimedJob) => Settlement;
      await store.jobsSettle([ok(twice)]);
      const out = await store.jobsSettle([ok(moved), ok(keyed), ok(twice), ok({ ...moved, attempt: 2 })]);
      expect(out.map((o) => [o.jobId, o.status, o.state])).toEqual([
        [moved.id, "accepted", "succeeded"],
        [keyed.id, "accepted", "succeeded"],
        [twice.id, "accepted", "succeeded"],
        [moved.id, "lease_lost", null],
      ]);
      expect(await where([moved.id, keyed.id, twice.id])).toEqual(["history", "live", "history"]);
      expect(await store.jobsMoveFinished(100)).toBe(1);
    });

    it("not keeping finished jobs, successes delete their jobs, keyed or not, and forget their earlier attempts", async () => {
      const deleting = new Store(db, { deleteFinished: true });
      const q = queue();
      const [retried, keyed] = await deleting.jobsEnqueue([
        newJob(q),
        newJob(q, { idempotencyKey: "k-forget" }),
      ]);
      const [first] = (await claim(q, 1)) as [ClaimedJob];
      expect(first.id).toBe(retried?.id);
      const error = { type: "Flaky", message: "again", retryable: true };
      await deleting.jobsSettle([{ jobId: first.id, attempt: 1, kind: "failure", error, delayMs: 0 }]);
      const attempts = async () =>
        (
          await sql<{ n: number }>("select count(*)::int as n from taskq.job_attempts where job_id = $1", [
            first.id,
          ])
        )[0]?.n;
      expect(await attempts()).toBe(1);
      const again = await claim(q, 2);
      expect(again.map((c) => c.id).sort()).toEqual([retried?.id, keyed?.id].sort());
      const ok = outcomes.succeeded as (c: ClaimedJob) => Settlement;
      const out = await deleting.jobsSettle(again.map(ok));
      expect(out.map((o) => [o.status, o.state])).toEqual([
        ["accepted", "succeeded"],
        ["accepted", "succeeded"],
      ]);
      expect(await where(again.map((c) => c.id))).toEqual(["nowhere", "nowhere"]);
      expect(await attempts()).toBe(0);
    });

    it("lease expiries, TTLs and cancels of waiting jobs move at the next tick, and read as before", async () => {
      const q = queue();
      const t0 = new Date(Date.now() - 60_000);
      const [leased, waiting, ttl] = await store.jobsEnqueue(
        [newJob(q, { maxAttempts: 1 }), newJob(q), newJob(q, { ttlSeconds: 1, delayMs: 30_000 })],
        t0,
      );
      await claim(q, 1, t0);
      await store.jobCancel(waiting?.id ?? "", "operator said so", t0);
      expect(await store.jobsExpireTtl(100, new Date(t0.getTime() + 2_000))).toBe(1);
      expect((await store.leasesRescue(100, new Date(t0.getTime() + lease + 1))).count).toBe(1);
      const ids = [waiting?.id ?? "", ttl?.id ?? "", leased?.id ?? ""];
      const before = await Promise.all(ids.map((id) => store.jobGet(id)));
      expect(before.map((j) => [j?.state, j?.outcome])).toEqual([
        ["cancelled", "cancelled"],
        ["cancelled", "expired_ttl"],
        ["failed", "lease_expired"],
      ]);
      expect(await store.jobsMoveFinished(100)).toBe(3);
      expect(await where(ids)).toEqual(["history", "history", "history"]);
      expect(await Promise.all(ids.map((id) => store.jobGet(id)))).toEqual(before);
      // A finished job is found by cancel, and left as it is.
      expect(await store.jobCancel(ids[0] ?? "", "again")).toEqual(before[0]);
    });

    it("redrive moves failed jobs back to the live table, where they run and finish", async () => {
      const q = queue();
      await store.jobsEnqueue([newJob(q, { maxAttempts: 1 }), newJob(q, { maxAttempts: 1 })]);
      const failed = await claim(q, 2);
      await store.jobsSettle(failed.map((c) => outcomes.failed?.(c) as Settlement));
      const ids = failed.map((c) => c.id);
      expect(await where(ids)).toEqual(["history", "history"]);
      expect(await new ScheduleStore(db).queueRedriveFailed(q, 10, "operator:test", 0)).toBe(2);
      expect(await where(ids)).toEqual(["live", "live"]);
      const again = await claim(q, 2);
      expect(again.map((c) => [c.id, c.attempt]).sort()).toEqual(ids.map((id) => [id, 2]).sort());
      await store.jobsSettle(again.map((c) => outcomes.succeeded?.(c) as Settlement));
      expect(await where(ids)).toEqual(["history", "history"]);
      expect((await store.jobGet(ids[0] ?? ""))?.state).toBe("succeeded");
    });

    it("an idempotency key held by a finished job is refused while the job is kept, and free once it is not", async () => {
      const q = queue();
      const keyed = newJob(q, { idempotencyKey: "order-1" });
      const [first] = await store.jobsEnqueue([keyed]);
      const [c] = (await claim(q, 1)) as [ClaimedJob];
      await store.jobsSettle([outcomes.succeeded?.(c) as Settlement]);
      // Finished in place: the live table's unique index refuses the key.
      expect(await store.jobsEnqueue([keyed])).toEqual([{ id: first?.id, duplicate: true }]);
      await store.jobsMoveFinished(100);
      expect(await where([first?.id ?? ""])).toEqual(["history"]);
      // In the history: the enqueue's look into it refuses the key, and names the job that holds it.
      expect(await store.jobsEnqueue([keyed])).toEqual([{ id: first?.id, duplicate: true }]);
      expect(await sql("select id from taskq.jobs where queue = $1", [q])).toHaveLength(1);
      // Past retention the job is hidden, and its key with it.
      await store.jobHistoryKeep(100, 0, new Date());
      const [second] = await store.jobsEnqueue([keyed]);
      expect(second).toMatchObject({ duplicate: false });
      expect(second?.id).not.toBe(first?.id);
      await store.jobHistoryKeep(100, 86_400, new Date());
    });

    it("drops a day's partition only once its last job is past retention", async () => {
      // Days far ahead, so the database's clock, by which reads hide, hides none of these jobs.
      const day = new Date(Date.UTC(2040, 0, 10));
      const at = (h: number, m: number) => new Date(day.getTime() + (h * 60 + m) * 60_000);
      const q = queue();
      await store.jobHistoryKeep(100, 3600, at(0, 0));
      /** A job that finishes at `when`, after a failed attempt a minute before (kept in job_attempts). */
      const finish = async (when: Date) => {
        const before = new Date(when.getTime() - 60_000);
        const [e] = await store.jobsEnqueue([newJob(q)], before);
        const [first] = (await claim(q, 1, before)) as [ClaimedJob];
        const retry: Settlement = {
          jobId: first.id,
          attempt: first.attempt,
          kind: "failure",
          error: { type: "Flaky", message: "once", retryable: true },
          delayMs: 0,
        };
        await store.jobsSettle([retry], before);
        const [c] = (await claim(q, 1, when)) as [ClaimedJob];
        await store.jobsSettle([outcomes.succeeded?.(c) as Settlement], when);
        return e?.id ?? "";
      };
      const attempts = async (id: string) =>
        (
          await sql<{ n: string }>("select count(*)::text as n from taskq.job_attempts where job_id = $1", [
            id,
          ])
        )[0]?.n;
      const early = await finish(at(0, 10));
      const late = await finish(at(23, 50));
      expect([await attempts(early), await attempts(late)]).toEqual(["1", "1"]);
      const partition = async () =>
        (await sql<{ p: string | null }>("select to_regclass('taskq.job_history_20400110')::text as p"))[0]
          ?.p;
      expect(await partition()).toBe("taskq.job_history_20400110");
      // An hour after the early job the late one is within retention: the day stays, with both jobs.
      await store.jobHistoryKeep(100, 3600, at(24 + 0, 59));
      expect(await partition()).toBe("taskq.job_history_20400110");
      expect((await store.jobGet(late))?.state).toBe("succeeded");
      expect((await store.jobGet(early))?.state).toBe("succeeded");
      expect([await attempts(early), await attempts(late)]).toEqual(["1", "1"]);
      // An hour after the day's end its last job is past retention: the day goes at once, whole.
      await store.jobHistoryKeep(100, 3600, at(25, 0));
      expect(await partition()).toBeNull();
      expect(await store.jobGet(late)).toBeNull();
      expect(await store.jobGet(early)).toBeNull();
      // Their attempts went with them.
      expect([await attempts(early), await attempts(late)]).toEqual(["0", "0"]);
      await store.jobHistoryKeep(100, 86_400, new Date());
    });

    it("vacuums the live table once it holds the dead rows asked for and nothing vacuumed it lately", async () => {
      const q = queue();
      await store.jobsEnqueue(Array.from({ length: 50 }, () => newJob(q)));
      await store.jobsSettle((await claim(q, 50)).map((c) => outcomes.succeeded?.(c) as Settlement));
      const dead = async () =>
        Number(
          (
            await sql<{ n: string }>("select pg_stat_get_dead_tuples('taskq.live_jobs'::regclass)::text as n")
          )[0]?.n,
        );
      // Postgres counts dead rows as each transaction ends, and shares the count within a second.
      const deadline = Date.now() + 10_000;
      while ((await dead()) < 100 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await dead()).toBeGreaterThanOrEqual(100);
      expect(await store.liveJobsVacuum(1_000_000)).toBe(false);
      expect(await store.liveJobsVacuum(100)).toBe(true);
      expect(await dead()).toBeLessThan(100);
      // Vacuumed now: not again within the quiet time, whatever dead rows come meanwhile.
      expect(await store.liveJobsVacuum(0, 60)).toBe(false);
      expect(await store.liveJobsVacuum(0, 0)).toBe(true);
    });

    it("moves finished jobs left in the live table page by page; a move cut off halfway resumes, each job once", async () => {
      // Finished jobs left in the live table, as a lease expiry, TTL or cancel leaves them.
      const q = queue();
      await sql(
        `insert into taskq.live_jobs (queue, state, payload, max_attempts, run_at, enqueued_at, finished_at, outcome)
         select $1, (array['succeeded', 'failed', 'cancelled'])[1 + i % 3], '\\x', 1, now(), now(), now() - i * interval '1 s',
                (array['succeeded', 'failed', 'cancelled'])[1 + i % 3]
         from generate_series(1, 250) as i`,
        [q],
      );
      await store.jobsEnqueue([newJob(q), newJob(q, { delayMs: 60_000 })]);
      const ids = (
        await sql<{ id: string }>("select id::text as id from taskq.jobs where queue = $1", [q])
      ).map((r) => r.id);
      expect(ids).toHaveLength(252);
      // Cut off: a page moved inside a transaction that never commits.
      await db
        .transaction(async (tx) => {
          expect(await new Store(tx).jobsMoveFinished(100)).toBe(100);
          throw new Error("cut off");
        })
        .catch((err: Error) => expect(err.message).toBe("cut off"));
      expect((await where(ids)).filter((w) => w === "history")).toHaveLength(0);
      expect(await store.jobsMoveFinished(100)).toBe(100);
      expect(await store.jobsMoveFinished(100)).toBe(100);
      expect(await store.jobsMoveFinished(100)).toBe(50);
      expect(await store.jobsMoveFinished(100)).toBe(0);
      const places = await where(ids);
      expect(places.filter((w) => w === "history")).toHaveLength(250);
      expect(places.filter((w) => w === "live")).toHaveLength(2);
      const seen = await sql<{ id: string }>("select id::text as id from taskq.jobs where queue = $1", [q]);
      expect(seen.map((r) => r.id).sort()).toEqual([...ids].sort());
    });
  });
}
