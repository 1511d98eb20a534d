import { ThrottleReason } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Cluster,
  claimOnce,
  enqueueMany,
  spawnFleet,
  startCluster,
} from "../testing/cluster-harness.js";
import { haveService } from "../testing/services.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Pause is decided under the queue's row lock (taskq.jobs_claim), not from a gateway's settings cache: no
// claim starts after the pause commits, on any instance, for a queue with other gates too.
describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "pause across three gateway instances",
  () => {
    let c: Cluster;
    beforeAll(async () => {
      c = await startCluster({ config: { pausedRetryMs: 10 } });
    });
    afterAll(async () => {
      await c?.stop();
    });

    it("a claim waiting on a pause's row lock answers PAUSED once it commits, on every instance", async () => {
      const q = c.name("pause-lock");
      await c.admins[0]?.ensureQueue({ queue: q, profile: { claim_rate_per_minute: 6_000_000 } });
      await enqueueMany(c, q, 10);
      // Every instance has cached the queue as not paused.
      for (let i = 0; i < 3; i++) expect((await claimOnce(c, i, q)).jobs).toHaveLength(1);
      await c.pg.query("begin");
      await c.pg.query("select taskq.pause_queue($1, 'test')", [q]);
      const claims = [0, 1, 2].map((i) => claimOnce(c, i, q));
      await sleep(100);
      await c.pg.query("commit");
      for (const res of await Promise.all(claims)) {
        expect(res.jobs).toEqual([]);
        expect(res.throttled.map((v) => ThrottleReason[v.reason])).toEqual(["PAUSED"]);
      }
    });

    it("10 pause cycles under 30 workers: no claim starts after a pause commits", async () => {
      const q = c.name("pause-cycles");
      // Gated by limits that never bind, so claims go through the gates and the settings cache.
      await c.admins[0]?.ensureQueue({
        queue: q,
        profile: { max_running: 1000, claim_rate_per_minute: 6_000_000 },
      });
      await enqueueMany(c, q, 30_000);
      const fleet = await spawnFleet(c, { count: 30, queues: [q], handlerMs: 1 });
      const late: number[] = [];
      let claimedWhileOn = 0;
      try {
        for (let cycle = 0; cycle < 10; cycle++) {
          await c.pg.query("select taskq.resume_queue($1, 'test')", [q]);
          await sleep(150);
          await c.pg.query("select taskq.pause_queue($1, 'test')", [q]);
          // At or after the commit, on Postgres's clock (claims stamp started_at with it too).
          const committed = (await c.pg.query<{ t: Date }>("select clock_timestamp() as t")).rows[0]
            ?.t as Date;
          await sleep(150);
          const after = await c.pg.query<{ n: number; worst: number | null }>(
            `select count(*)::int as n,
               max(extract(epoch from started_at - $2::timestamptz) * 1000)::float8 as worst
             from taskq.jobs where queue = $1 and started_at > $2::timestamptz`,
            [q, committed],
          );
          const row = after.rows[0];
          if (row && row.n > 0) late.push(row.worst ?? 0);
        }
        claimedWhileOn = (
          await c.pg.query<{ n: number }>(
            "select count(*)::int as n from taskq.jobs where queue = $1 and started_at is not null",
            [q],
          )
        ).rows[0]?.n as number;
      } finally {
        await fleet.stop();
      }
      console.log("pause cycles", { claimedWhileOn, cyclesWithLateClaims: late.length, worstMs: late });
      // The fleet was busy while the queue ran, so a stale cache would have had claims to let through.
      expect(claimedWhileOn).toBeGreaterThan(100);
      expect(late).toEqual([]);
    });
  },
);
