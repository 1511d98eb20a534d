import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";
import { settleOfEveryKind } from "../testing/settle-of-every-kind.js";
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

    /** Runs `fn` in a transaction and rolls it back: every case starts from the same running jobs. */
    async function rolledBack<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      let out: T | undefined;
      await db
        .transaction(async (tx) => {
          out = await fn(tx);
          throw rollback;
        })
        .catch((e: unknown) => {
          if (e !== rollback) throw e;
        });
      return out as T;
    }

    /** Index entries `fn` read from the index of running jobs. */
    const runningIndexReads = (fn: (store: Store) => Promise<unknown>) =>
      rolledBack(async (tx) => {
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
        return (await reads()) - before;
      });

    /** The fastest of 3 runs of `fn`, ms. */
    async function bestOf3(fn: (store: Store) => Promise<unknown>): Promise<number> {
      let best = Number.POSITIVE_INFINITY;
      for (let run = 0; run < 3; run++) {
        const ms = await rolledBack(async (tx) => {
          const t0 = performance.now();
          await fn(new Store(tx));
          return performance.now() - t0;
        });
        best = Math.min(best, ms);
      }
      return best;
    }

    const leases = (n: number): LeaseKey[] =>
      claimed.slice(0, n).map((c) => ({ jobId: c.id, attempt: c.attempt }));
    const statements: [string, (store: Store, leases: LeaseKey[]) => Promise<unknown>][] = [
      [
        "settle",
        (s, l) => s.jobsSettle(l.map((k) => ({ ...k, kind: "success" as const, result: new Uint8Array() }))),
      ],
      // Every kind at once: the statement for anything but successes, with its update and attempt rows.
      ["settle of every kind", (s, l) => s.jobsSettle(l.map((k, i) => settleOfEveryKind(k, i)))],
      ["heartbeat", (s, l) => s.leasesExtend(l.map((k) => ({ ...k, extendMs: 30_000 })))],
      ["release", (s, l) => s.jobsRelease(l)],
      ["unclaim", (s, l) => s.jobsUnclaim(l)],
    ];
    for (const [name, run] of statements) {
      it(`${name} of ${ASKED} jobs reads none of the ${RUNNING} others running`, async () => {
        expect(await runningIndexReads((s) => run(s, leases(ASKED)))).toBeLessThan(ASKED * 2);
      });

      // Linear is 10× (less, with each statement's fixed cost); matching every row against every id
      // was 45-55×.
      it(`${name} of 1,000 jobs costs less than 25× one of 100`, async () => {
        await bestOf3((s) => run(s, leases(100))); // plans made, caches warm
        const small = await bestOf3((s) => run(s, leases(100)));
        const large = await bestOf3((s) => run(s, leases(1_000)));
        expect(large / small).toBeLessThan(25);
      });
    }
  });
}

/** Thrown to roll a case's transaction back. */
const rollback = new Error("rollback");
