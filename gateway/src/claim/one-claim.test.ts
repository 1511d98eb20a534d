import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import { QueueStore } from "../store/queue-store.js";
import { Store } from "../store/store.js";
import { newJob } from "../testing/new-job.js";
import { engines, freshPostgres, haveService, knownQueues } from "../testing/services.js";

const ACTOR = "operator:test";

// taskq.jobs_claim decides pause, breaker and max_running under each queue's row lock, for every
// queue and for all the polls it answers at once.
for (const engine of engines) {
  describe.skipIf(!engine.available())(`one claim statement under max_running (${engine.name})`, () => {
    let handle: Awaited<ReturnType<(typeof engine)["open"]>>;
    let store: Store;
    let queues: QueueStore;
    let round = 0;
    beforeAll(async () => {
      handle = await engine.open();
      store = new Store(handle.db);
      queues = new QueueStore(handle.db);
    });
    afterAll(() => handle.close());

    it("merged polls never pass the cap; those left without a job once it is full get MAX_RUNNING", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 6 }),
          fc.integer({ min: 0, max: 6 }),
          fc.integer({ min: 0, max: 12 }),
          fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 5 }),
          async (cap, runningBefore, queued, limits) => {
            const q = `cap-${engine.name}-${++round}`;
            await knownQueues(handle.db, q);
            await store.jobsEnqueue(Array.from({ length: runningBefore + queued }, () => newJob(q)));
            const running =
              runningBefore === 0
                ? 0
                : (
                    await store.jobsClaim({
                      queues: [q],
                      limit: runningBefore,
                      leaseMs: 60_000,
                      workerId: "x",
                    })
                  ).length;
            await queues.queueSetConcurrency(q, cap, ACTOR);

            const polls = limits.map((limit, i) => ({ limit, leaseMs: 60_000, workerId: `w${i}` }));
            const out = await store.jobsClaimMany({ queues: [q], polls });
            const claimed = out.jobs.flat();
            const room = Math.max(0, cap - running);
            const ready = queued;
            const wanted = limits.reduce((a, b) => a + b, 0);
            expect(claimed).toHaveLength(Math.min(room, ready, wanted));
            expect(new Set(claimed.map((j) => j.id)).size).toBe(claimed.length);
            const full = claimed.length === room;
            out.jobs.forEach((jobs, i) => {
              expect(jobs.length).toBeLessThanOrEqual(limits[i] ?? 0);
              const verdicts = out.verdicts[i] ?? [];
              // A poll that got a job of the queue is never also declined by it.
              if (jobs.length > 0) expect(verdicts).toEqual([]);
              else if (full) expect(verdicts.map((v) => v.reason)).toEqual(["MAX_RUNNING"]);
              else expect(verdicts).toEqual([]);
            });
            return true;
          },
        ),
        { numRuns: 30 },
      );
    });
  });
}

describe.skipIf(!haveService("postgres"))("pause decided under the queue's row lock", () => {
  let fresh: Awaited<ReturnType<typeof freshPostgres>>;
  let db: ReturnType<typeof postgresDb>;
  let store: Store;
  beforeAll(async () => {
    fresh = await freshPostgres();
    db = postgresDb({ url: fresh.url, poolSize: 4 });
    await migrate(db);
    store = new Store(db);
  });
  afterAll(async () => {
    await db.close();
    await fresh.drop();
  });

  it("a claim that meets a pause not yet committed waits for it, then answers PAUSED", async () => {
    const q = "held";
    await knownQueues(db, q);
    await store.jobsEnqueue([newJob(q)]);
    const operator = new pg.Client({ connectionString: fresh.url });
    await operator.connect();
    try {
      await operator.query("begin");
      await operator.query("select taskq.pause_queue($1, $2)", [q, ACTOR]);
      const claim = store.jobsClaimMany({
        queues: [q],
        polls: [{ limit: 5, leaseMs: 60_000, workerId: "w" }],
      });
      let settled = false;
      void claim.finally(() => {
        settled = true;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false); // waiting on the row lock the pause holds
      await operator.query("commit");
      const out = await claim;
      expect(out.jobs).toEqual([[]]);
      expect(out.verdicts).toEqual([[{ queue: q, reason: "PAUSED", retryAfterMs: null }]]);
    } finally {
      await operator.end();
    }
  });
});
