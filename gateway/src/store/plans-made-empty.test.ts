import { describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines, type TestEngine } from "../testing/services.js";
import { settleOfEveryKind } from "../testing/settle-of-every-kind.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";
import { Store } from "./store.js";
import type { ClaimedJob } from "./types.js";

// The job path's functions plan each statement once per connection (force_generic_plan), from the
// statistics of that moment, and keep the plan until the table is next analyzed. Planned on a nearly
// empty table, a claim read every ready job through the (queue, run_at) index and sorted them (under a
// steady 5,000 jobs/s a claim took 10-17 ms, and the backlog fed itself), a settle read every job, and
// an enqueue into an on_idle_transition queue read the table once per job. Everything here runs in one
// transaction: no analyze from outside refreshes the plans meanwhile.
const READY = 20_000;
const FINISHED = 20_000;
const LIMIT = 50;
const FEW = 10;
const QUEUE = "planned-empty";
const AGING = "planned-empty-aging";
const ask = { queues: [QUEUE], limit: LIMIT, leaseMs: 60_000, workerId: "w" };

for (const engine of engines) {
  describe.skipIf(!engine.available())(`plans made while the jobs table was empty, on ${engine.name}`, () => {
    it(`enqueue, claim and settle of ${LIMIT} jobs read about that many rows, not the ${READY} ready or ${FINISHED} finished`, () =>
      inOneTransaction(engine, async (tx) => {
        const store = new Store(tx);
        // Its enqueues look for a ready job first (they NOTIFY only when there was none).
        await new QueueStore(tx).queueEnsure(QUEUE, { notify_mode: "on_idle_transition" }, "test");
        // Its claims look for a second priority level first (aging reorders only across levels).
        await new QueueStore(tx).queueEnsure(AGING, { priority_aging_seconds: 60 }, "test");
        await tx.query({ name: "", text: "analyze taskq.live_jobs, taskq.job_history" });
        // First use on this connection, with nothing in the table: the plans are made now.
        await store.jobsEnqueue([newJob(`${QUEUE}-first`)]);
        expect(await store.jobsClaim(ask)).toEqual([]);
        expect(await store.jobsClaim({ ...ask, queues: [AGING] })).toEqual([]);
        await store.jobsSettle([{ jobId: "1", attempt: 1, kind: "success", result: new Uint8Array() }]);
        await store.jobsSettle([{ jobId: "1", attempt: 1, kind: "cancel", reason: "first" }]);

        await grow(tx, QUEUE);
        await grow(tx, AGING);
        const keyed = [...Array(LIMIT)].map((_, i) => newJob(QUEUE, { idempotencyKey: `k${i}` }));
        const enqueue = await rowsRead(tx, () => store.jobsEnqueue(keyed));
        const claim = await rowsRead(tx, () => store.jobsClaim(ask));
        expect(claim.result).toHaveLength(LIMIT);
        const settle = await rowsRead(tx, () => store.jobsSettle(claim.result.map((c) => success(c))));
        const aged = await rowsRead(tx, () => store.jobsClaim({ ...ask, queues: [AGING] }));
        expect(aged.result).toHaveLength(LIMIT);
        // The same plan, for a gateway that deletes the jobs it finishes (retention 0).
        const more = await store.jobsClaim(ask);
        const deleting = new Store(tx, { deleteFinished: true });
        const settleDeleting = await rowsRead(tx, () => deleting.jobsSettle(more.map((c) => success(c))));
        // Every kind of settle at once: the statement for anything but successes.
        const mixed = await store.jobsClaim(ask);
        const settleMixed = await rowsRead(tx, () =>
          store.jobsSettle(mixed.map((c, i) => settleOfEveryKind({ jobId: c.id, attempt: c.attempt }, i))),
        );
        // The enqueue looks up each key, and a ready job once per job; the claim reads its jobs from the
        // ready index and again to lease them; the settle probes each job once.
        expect({
          enqueue: enqueue.read,
          claim: claim.read,
          agingClaim: aged.read,
          settle: settle.read,
          settleMixed: settleMixed.read,
          settleDeleting: settleDeleting.read,
        }).toEqual({
          enqueue: expect.toSatisfy((n: number) => n <= LIMIT * 2),
          claim: expect.toSatisfy((n: number) => n <= LIMIT * 3),
          agingClaim: expect.toSatisfy((n: number) => n <= LIMIT * 3),
          settle: expect.toSatisfy((n: number) => n <= LIMIT * 2),
          // Each job by the finishing delete and again by the update, the few left live once more.
          settleMixed: expect.toSatisfy((n: number) => n <= LIMIT * 6),
          settleDeleting: expect.toSatisfy((n: number) => n <= LIMIT * 2),
        });
      }));

    // Prepared statements are planned per call at first; from about the sixth call on a connection
    // Postgres may keep one generic plan, made from the statistics of then. The statements that name jobs
    // by id, and the maintenance tick's, are planned at each call instead.
    it(`heartbeats, lookups, put-backs and maintenance read about ${FEW} rows for ${FEW} jobs, however their first calls were planned`, () =>
      inOneTransaction(engine, async (tx) => {
        const store = new Store(tx);
        await tx.query({ name: "", text: "analyze taskq.live_jobs, taskq.job_history" });
        const [first] = await store.jobsEnqueue([newJob(QUEUE)]);
        const unknown = [{ jobId: String(first?.id), attempt: 7 }];
        for (let i = 0; i < 6; i++) await everyLookup(store, unknown);

        await grow(tx, QUEUE);
        await store.jobsEnqueue([...Array(FEW)].map(() => newJob(QUEUE)));
        const claimed = await store.jobsClaim({ ...ask, limit: FEW });
        expect(claimed).toHaveLength(FEW);
        // A few reads per job: its index entry and row, and the row once more where two statements look
        // (a repeated settle, then the lookup that tells it is a repeat).
        const few = expect.toSatisfy((n: number) => n <= FEW * 4);
        expect(
          await everyLookup(
            store,
            claimed.map((c) => ({ jobId: c.id, attempt: c.attempt })),
          ),
        ).toEqual({
          heartbeat: few,
          // A success that applies to nothing probes each job three times (the successes' delete, the
          // finishing delete, then the update), then reads its status from the live table and the
          // history: still a few reads per job.
          settleStatus: expect.toSatisfy((n: number) => n <= FEW * 12),
          jobQueues: few,
          jobGet: few,
          cancel: few,
          // A put-back also reads each job's worker and claim time as they were, for its attempt row.
          release: expect.toSatisfy((n: number) => n <= FEW * 6),
          unclaim: few,
          rescue: few,
          promote: few,
          expireTtl: few,
          moveFinished: few,
        });
      }));

    // Sequential scans and sorts off make a plan that still needs a sort (the pick over several queues)
    // cost more than jit_above_cost (with Postgres' default settings); JIT-compiling the claim took
    // 300-800 ms each time.
    it("an enqueue, a claim over several queues and a settle are not JIT-compiled", () =>
      inOneTransaction(engine, async (tx) => {
        const store = new Store(tx);
        const jobs = [...Array(LIMIT)].map((_, i) => newJob(i % 2 ? QUEUE : `${QUEUE}-2`));
        const tEnqueue = performance.now();
        await store.jobsEnqueue(jobs);
        const t0 = performance.now();
        const claimed = await store.jobsClaim({ ...ask, queues: [QUEUE, `${QUEUE}-2`] });
        const t1 = performance.now();
        await store.jobsSettle(claimed.map((c) => success(c)));
        const t2 = performance.now();
        expect(claimed).toHaveLength(LIMIT);
        // Each takes a few ms; compiled, hundreds.
        expect({ enqueue: t0 - tEnqueue < 150, claim: t1 - t0 < 150, settle: t2 - t1 < 150 }).toEqual({
          enqueue: true,
          claim: true,
          settle: true,
        });
      }));
  });
}

const success = (c: ClaimedJob) => ({
  jobId: c.id,
  attempt: c.attempt,
  kind: "success" as const,
  result: new Uint8Array(),
});

/**
 * Rows read by each statement that names jobs by id, for `leases` (a heartbeat, the lookup of a repeated
 * settle, a queue-scoped token's check, reading and cancelling the first, putting them back, undoing
 * their claim once put back: nothing left to undo), and by the maintenance tick's
 * statements that look for due work.
 */
async function everyLookup(store: Store, leases: { jobId: string; attempt: number }[]) {
  const read = async (fn: () => Promise<unknown>) => (await rowsRead(store.db, fn)).read;
  const ids = leases.map((l) => l.jobId);
  const repeat = leases.map((l) => ({
    ...l,
    attempt: l.attempt + 1,
    kind: "success" as const,
    result: new Uint8Array(),
  }));
  return {
    heartbeat: await read(() => store.leasesExtend(leases.map((l) => ({ ...l, extendMs: null })))),
    settleStatus: await read(() => store.jobsSettle(repeat)),
    jobQueues: await read(() => store.jobQueues(ids)),
    jobGet: await read(() => store.jobGet(ids[0] ?? "0")),
    cancel: await read(() => store.jobCancel(ids[0] ?? "0", "")),
    release: await read(() => store.jobsRelease(leases)),
    unclaim: await read(() => store.jobsUnclaim(leases)),
    rescue: await read(() => store.leasesRescue(100)),
    promote: await read(() => store.jobsPromote(100)),
    expireTtl: await read(() => store.jobsExpireTtl(100)),
    moveFinished: await read(() => store.jobsMoveFinished(100)),
  };
}

/** A retained history of finished jobs, then a backlog of ready ones, an hour old, written directly (fast). */
async function grow(tx: Db, queue: string): Promise<void> {
  await tx.query(
    {
      name: "",
      text: `with past as (select now() - interval '1 hour' as t), finished as (
               insert into taskq.job_history (id, queue, state, payload, max_attempts, run_at, enqueued_at, finished_at)
               select nextval(pg_get_serial_sequence('taskq.live_jobs', 'id')), $1::text, 'succeeded', '', 5, t, t, t
               from generate_series(1, $2::int), past)
             insert into taskq.live_jobs (queue, state, payload, max_attempts, run_at, enqueued_at)
             select $1::text, 'queued', '', 5, t, t from generate_series(1, $3::int), past`,
    },
    [queue, FINISHED, READY],
  );
}

/** What `fn` returned, and the rows of the live and finished jobs' tables it read by sequential scans and through any index. */
async function rowsRead<T>(tx: Db, fn: () => Promise<T>): Promise<{ result: T; read: number }> {
  // This transaction's counts, not yet flushed to the shared statistics: read before and after.
  const reads = async () => {
    const [row] = await tx.query<{ n: string }>({
      name: "",
      text: `with tables as (
               select 'taskq.live_jobs'::regclass as t
               union all select relid from pg_partition_tree('taskq.job_history') where isleaf)
             select (select sum(pg_stat_get_xact_tuples_returned(t)) from tables)
                    + (select coalesce(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0)
                       from pg_index where indrelid in (select t from tables)) as n`,
    });
    return Number(row?.n);
  };
  const before = await reads();
  const result = await fn();
  return { result, read: (await reads()) - before };
}

/**
 * Runs `fn` in one transaction, on one connection, of a fresh database of `engine` (dropped after):
 * the plans `fn` makes are that connection's, and no analyze from outside refreshes them meanwhile.
 */
async function inOneTransaction(engine: TestEngine, fn: (tx: Db) => Promise<void>): Promise<void> {
  const { db, close } = await engine.open();
  try {
    await db.transaction(fn);
  } finally {
    await close();
  }
}
