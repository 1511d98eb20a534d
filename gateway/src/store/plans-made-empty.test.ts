import { describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines, type TestEngine } from "../testing/services.js";
import type { Db } from "./db.js";
import { Store } from "./store.js";
import type { ClaimedJob } from "./types.js";

// The job path's functions plan each statement once per connection (force_generic_plan), from the
// statistics of that moment, and keep the plan for the connection's life. A gateway started on an empty
// table must still claim and settle by reading what it touches once a backlog and a retained history have
// grown: a claim planned on an empty table read every ready job through the (queue, run_at) index and
// sorted them (a claim under a steady 5,000 jobs/s took 10-17 ms, and the backlog fed itself), and a settle
// read every job with a sequential scan.
const READY = 20_000;
const FINISHED = 20_000;
const LIMIT = 50;
const QUEUE = "planned-empty";
const ask = { queues: [QUEUE], limit: LIMIT, leaseMs: 60_000, workerId: "w" };

for (const engine of engines) {
  describe.skipIf(!engine.available())(`plans made while the jobs table was empty, on ${engine.name}`, () => {
    it(`claim, settle and enqueue of ${LIMIT} jobs read about that many rows, not the ${READY} ready or ${FINISHED} finished`, () =>
      inOneTransaction(engine, async (tx) => {
        const store = new Store(tx);
        await tx.query({ name: "", text: "analyze taskq.jobs" });
        // First use on this connection, with nothing in the table: the plans are made now.
        expect(await store.jobsClaim(ask)).toEqual([]);
        await store.jobsSettle([{ jobId: "1", attempt: 1, kind: "success", result: new Uint8Array() }]);
        await store.jobsEnqueue([newJob(QUEUE)]);

        await grow(tx);
        let claimed: ClaimedJob[] = [];
        const claimRead = await rowsRead(tx, async () => {
          claimed = await store.jobsClaim(ask);
        });
        expect(claimed).toHaveLength(LIMIT);
        const settleRead = await rowsRead(tx, () => store.jobsSettle(claimed.map((c) => success(c))));
        const enqueueRead = await rowsRead(tx, () =>
          store.jobsEnqueue(
            Array.from({ length: LIMIT }, (_, i) => newJob(QUEUE, { idempotencyKey: `k${i}` })),
          ),
        );
        // The claim reads its jobs from the ready index and again to lease them; the settle probes
        // each job once; the enqueue looks up each key.
        expect(claimRead, "rows the claim read").toBeLessThanOrEqual(LIMIT * 3);
        expect(settleRead, "rows the settle read").toBeLessThanOrEqual(LIMIT * 2);
        expect(enqueueRead, "rows the enqueue read").toBeLessThanOrEqual(LIMIT * 2);
      }));

    // Sequential scans and sorts off make a plan that still needs a sort (the pick over several queues)
    // cost more than jit_above_cost; JIT-compiling the claim took 300-800 ms each time.
    it("a claim over several queues and a settle are not JIT-compiled", () =>
      inOneTransaction(engine, async (tx) => {
        const store = new Store(tx);
        for (const knob of ["jit_above_cost", "jit_inline_above_cost", "jit_optimize_above_cost"]) {
          await tx.query({ name: "", text: `set local ${knob} = 0` });
        }
        await store.jobsEnqueue([...Array(LIMIT)].map((_, i) => newJob(i % 2 ? QUEUE : `${QUEUE}-2`)));
        const t0 = performance.now();
        const claimed = await store.jobsClaim({ ...ask, queues: [QUEUE, `${QUEUE}-2`] });
        const t1 = performance.now();
        await store.jobsSettle(claimed.map((c) => success(c)));
        const t2 = performance.now();
        expect(claimed).toHaveLength(LIMIT);
        // Each takes a few ms; compiled, hundreds.
        expect({ claimMs: t1 - t0 < 150, settleMs: t2 - t1 < 150 }).toEqual({
          claimMs: true,
          settleMs: true,
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

/** A backlog of ready jobs and a retained history of finished ones, written directly (fast). */
async function grow(tx: Db): Promise<void> {
  await tx.query(
    {
      name: "",
      text: `insert into taskq.jobs (queue, state, payload, max_attempts, run_at, enqueued_at, finished_at)
           select $1::text, case when i <= $2::int then 'queued' else 'succeeded' end, '', 5, now(), now(),
                  case when i > $2::int then now() end
           from generate_series(1, $2::int + $3::int) as i`,
    },
    [QUEUE, READY, FINISHED],
  );
}

/** Rows of taskq.jobs that `fn` read, by sequential scans and through any of its indexes. */
async function rowsRead(tx: Db, fn: () => Promise<unknown>): Promise<number> {
  // This transaction's counts, not yet flushed to the shared statistics: read before and after.
  const read = async () => {
    const [row] = await tx.query<{ n: string }>({
      name: "",
      text: `select pg_stat_get_xact_tuples_returned('taskq.jobs'::regclass)
                    + (select coalesce(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0)
                       from pg_index where indrelid = 'taskq.jobs'::regclass) as n`,
    });
    return Number(row?.n);
  };
  const before = await read();
  await fn();
  return (await read()) - before;
}

/** Runs `fn` in one transaction (one connection) on a fresh database of `engine`, dropped after. */
async function inOneTransaction(engine: TestEngine, fn: (tx: Db) => Promise<void>): Promise<void> {
  const { db, close } = await engine.open();
  try {
    await db.transaction(fn);
  } finally {
    await close();
  }
}
