import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import {
  admitTimes,
  type Cluster,
  claimTimes,
  enqueueMany,
  type FleetReport,
  gaps,
  refunded,
  spawnFleet,
  startCluster,
  stats,
  throttleAudit,
  waitForClaims,
} from "./cluster-harness.js";

describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "throttle across three gateway instances",
  () => {
    let c: Cluster;
    beforeAll(async () => {
      c = await startCluster();
    });
    afterAll(async () => {
      await c?.stop();
    });

    it("{limit: 10, period_ms: 1000} with 20 workers: at most 101 claims in 10 s (95 when idle), never closer than 100 ms", async () => {
      const q = c.name("throttle");
      // A verb refuses a queue never seen: set it up first.
      await c.admins[0]?.ensureQueue({ queue: q });
      await c.admins[0]?.setQueueThrottle({ queue: q, limit: 10, periodMs: 1000 });
      await enqueueMany(c, q, 300);
      // 20 SDK workers in their own process, spread over the three instances, sleeping exactly
      // retry_after on each THROTTLE verdict.
      const fleet = await spawnFleet(c, { count: 20, queues: [q], concurrency: 2, handlerMs: 5 });
      let report: FleetReport | undefined;
      try {
        await waitForClaims(c, q);
        await new Promise((r) => setTimeout(r, 10_500));
      } finally {
        report = await fleet.stop();
      }
      // The gate's decisions, in Redis TIME: the exact claim times.
      const admits = admitTimes(c, "throttleTake", q);
      const a0 = admits[0] as number;
      const admitsIn10s = admits.filter((t) => t < a0 + 10_000).length;
      // The claims as Postgres recorded them (started_at = now() of the claim statement, which runs a
      // moment after the admit; an event-loop stall in between shifts it).
      const claims = await claimTimes(c, q);
      const c0 = claims[0] as number;
      const audit = throttleAudit(c, q, 100);
      console.log("throttle {10, 1000 ms}, 20 workers, 3 instances", {
        admitsIn10s,
        admitGapMs: stats(gaps(admits)),
        claimsIn10s: claims.filter((t) => t < c0 + 10_000).length,
        claimGapMs: stats(gaps(claims)),
        refunds: refunded(c, "throttleRefund", q),
        refusedTakes: audit.refusedTakes,
        violations: audit.violations,
        pollerLatenessMs: stats(audit.latenessMs),
        workers: report,
      });
      // The gate is exact: refused only while the slot was held, with retry_after landing on the slot,
      // and admitted whenever a take came once it was free. (Any shortfall below is the pollers'
      // lateness: a worker's wake-up, its poll's trip and CPU contention, reported above.)
      expect(audit.violations).toEqual([]);
      expect(admitsIn10s).toBeLessThanOrEqual(101);
      // Utilization: with no violation, every slot went to the first take after it freed, so 10 s hold
      // 10_000 / (100 ms + the pollers' mean lateness) admits: 95 on an idle machine, fewer on a loaded
      // one. A poller that overslept (say twice retry_after) would fall below the 80 % floor.
      const lateness = stats(audit.latenessMs).mean;
      expect(admitsIn10s).toBeGreaterThanOrEqual(Math.min(95, Math.floor(10_000 / (100 + lateness)) - 1));
      expect(admitsIn10s).toBeGreaterThanOrEqual(80);
      // Never two claims closer than the interval: Redis TIME is floored to whole ms, and a gap of at
      // least 100 ms in µs stays at least 100 ms floored.
      expect(Math.min(...gaps(admits))).toBeGreaterThanOrEqual(100);
      // Each admit is exactly one claimed job (a backlog: no slot was refunded), and nothing else was.
      expect(refunded(c, "throttleRefund", q)).toBe(0);
      expect(claims.length).toBe(admits.length);
      expect(report?.claimed).toBe(claims.length);
      // The workers were only ever told THROTTLE.
      expect(Object.keys(report?.throttled ?? {})).toEqual(["THROTTLE"]);
    }, 60_000);
  },
);
