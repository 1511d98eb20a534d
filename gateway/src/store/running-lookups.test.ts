import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";
import { Store } from "./store.js";
import type { ClaimedJob, LeaseKey } from "./types.js";

// Settles, heartbeats, releases and unclaims name their jobs by id. Their cost must not grow with the
// number of jobs running: with statistics taken while nothing ran (as they are until autovacuum next
// analyzes), a lookup written `state = 'running'` read the whole index of running jobs every time.
// Each statement runs in a transaction; the backend's own index counters (pg_stat_get_xact_*) say what
// it read. Nor may it grow faster than the batch: matching every row against every id was n².
const RUNNING = 2_000;
const ASKED = 10;

for (const engine of engines) {
  describe.skipIf(!engine.available())(`lookups of running jobs by id on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let claimed: ClaimedJob[];
    beforeAll(async () => {
      ({ db, close } = await engine.open());
      const store = new Store(db);
      await store.jobsEnqueue(Array.from({ length: RUNNING + ASKED }, () => newJob("lookups")));
      await db.query({ name: "", text: "analyze taskq.jobs" });
      claimed = await store.jobsClaim({
        queues: ["lookups"],
        limit: RUNNING,
        leaseMs: 60_000,
        workerId: "w",
      });
      expect(claimed).toHaveLength(RUNNING);
    });
    afterAll(() => close());

    /** Index entries `fn` read from the index of running jobs; what it changed is rolled back. */
    async function runningIndexReads(fn: (store: Store) => Promise<unknown>): Promise<number> {
      return db
        .transaction(async (tx) => {
          // The backend's counts not yet flushed to the shared statistics: read before and after.
          const reads = async () => {
            const [row] = await tx.query<{ n: string }>({
              name: "",
              text: "select pg_stat_get_xact_tuples_returned('taskq.jobs_running_lease_idx'::regclass) as n",
            });
            return Number(row?.n);
          };
          const before = await reads();
          await fn(new Store(tx));
          // Rolled back: each case starts from the same running jobs.
          throw new Rollback((await reads()) - before);
        })
        .catch((e: unknown) => {
          if (e instanceof Rollback) return e.reads;
          throw e;
        });
    }

    const some = () => claimed.slice(0, ASKED).map((c) => ({ jobId: c.id, attempt: c.attempt }));
    const cases: [string, (store: Store) => Promise<unknown>][] = [
      [
        "settle",
        (s) =>
          s.jobsSettle(some().map((l) => ({ ...l, kind: "success" as const, result: new Uint8Array() }))),
      ],
      ["heartbeat", (s) => s.leasesExtend(some().map((l) => ({ ...l, extendMs: 30_000 })))],
      ["release", (s) => s.jobsRelease(some())],
      ["unclaim", (s) => s.jobsUnclaim(some())],
    ];
    for (const [name, fn] of cases) {
      it(`${name} of ${ASKED} jobs reads none of the ${RUNNING} others running`, async () => {
        expect(await runningIndexReads(fn)).toBeLessThan(ASKED * 2);
      });
    }

    /** The fastest of 3 runs of `fn` over the first `n` running jobs, ms; each rolled back. */
    async function bestOf3(n: number, fn: (store: Store, leases: LeaseKey[]) => Promise<unknown>) {
      const leases = claimed.slice(0, n).map((c) => ({ jobId: c.id, attempt: c.attempt }));
      let best = Number.POSITIVE_INFINITY;
      for (let run = 0; run < 3; run++) {
        await db
          .transaction(async (tx) => {
            const t0 = performance.now();
            await fn(new Store(tx), leases);
            best = Math.min(best, performance.now() - t0);
            throw new Rollback(0);
          })
          .catch((e: unknown) => {
            if (!(e instanceof Rollback)) throw e;
          });
      }
      return best;
    }

    const batches: [string, (store: Store, leases: LeaseKey[]) => Promise<unknown>][] = [
      [
        "settle",
        (s, l) => s.jobsSettle(l.map((k) => ({ ...k, kind: "success" as const, result: new Uint8Array() }))),
      ],
      ["heartbeat", (s, l) => s.leasesExtend(l.map((k) => ({ ...k, extendMs: 30_000 })))],
    ];
    for (const [name, fn] of batches) {
      // Linear is 10× (less, with each statement's fixed cost); matching every row against every input
      // row was 50-100×.
      it(`a ${name} of 1,000 jobs costs less than 25× one of 100`, async () => {
        await bestOf3(100, fn); // plans made, caches warm
        const small = await bestOf3(100, fn);
        const large = await bestOf3(1_000, fn);
        console.log(name, engine.name, small.toFixed(2), large.toFixed(2), (large / small).toFixed(1));
        expect(large / small).toBeLessThan(25);
      });
    }
  });
}

class Rollback extends Error {
  constructor(readonly reads: number) {
    super("rollback");
  }
}
