import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Cluster, enqueueMany, startCluster, startFleet } from "../testing/cluster-harness.js";
import { haveService } from "../testing/services.js";

const MIN = 2;
const MAX = 12;
const TARGET_MS = 120;
const RUN_MS = 8_000;
const SAMPLE_MS = 10;
/** The longest a job of the mock downstream runs: a decrease frees places only as running jobs settle. */
const LONGEST_JOB_MS = 40 + 40 * (MAX - 6);

/**
 * Two gateways on one database, one adaptive queue, 40 worker slots over both: a burst of 3,000 jobs
 * against a mock downstream (in this process, so one in-flight count for the whole fleet) whose latency
 * is 40 ms up to 6 calls in flight and 40 ms more per call beyond. Both maintenance loops call the
 * controller four times a second; the queue gets one decision per interval, one limit for both gateways.
 */
describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "adaptive max_running across two gateway instances",
  () => {
    let c: Cluster;
    beforeAll(async () => {
      c = await startCluster({ size: 2 });
    });
    afterAll(async () => {
      await c?.stop();
    });

    it("one decision per interval fleet-wide; running never above the limit in force; it grows from min toward the downstream's level", async () => {
      const q = c.name("adaptive");
      await c.admins[0]?.ensureQueue({ queue: q });
      await c.admins[1]?.setAdaptiveConcurrency({ queue: q, min: MIN, max: MAX, targetLatencyMs: TARGET_MS });
      await enqueueMany(c, q, 3000);
      let inFlight = 0;
      let peakInFlight = 0;
      const fleet = await startFleet(c, {
        count: 20,
        concurrency: 2,
        queues: [q],
        maxWaitMs: 200,
        handler: async () => {
          inFlight++;
          peakInFlight = Math.max(peakInFlight, inFlight);
          await sleep(40 + 40 * Math.max(0, inFlight - 6));
          inFlight--;
        },
      });
      // Running jobs and the limit, in one snapshot, every 10 ms.
      const samples: { t: number; running: number; limit: number }[] = [];
      const start = performance.now();
      try {
        while (performance.now() - start < RUN_MS) {
          const r = await c.pg.query<{ running: number; limit: number }>(
            `select (select count(*)::int from taskq.live_jobs where queue = $1 and state = 'running') as running,
                    (select max_running from taskq.queues where name = $1) as limit`,
            [q],
          );
          const row = r.rows[0];
          if (row) samples.push({ t: performance.now(), ...row });
          await sleep(SAMPLE_MS);
        }
      } finally {
        await fleet.stop();
      }
      const limits = await Promise.all(
        c.admins.map(async (a) => (await a.getQueue({ queue: q })).queue?.maxRunning),
      );
      const changes = await c.pg.query<{ at_ms: number; limit_after: number; reason: string }>(
        `select floor(extract(epoch from at) * 1000)::float8 as at_ms, limit_after, reason
         from taskq.adaptive_changes where queue = $1 order by id`,
        [q],
      );
      const steps = changes.rows.slice(1); // after the operator's turn-on
      console.log("adaptive, 2 gateways, 40 slots", {
        samples: samples.length,
        peakRunning: Math.max(...samples.map((s) => s.running)),
        peakInFlight,
        limits: steps.map((s) => s.limit_after),
        claimed: fleet.claimed(),
      });

      // Both gateways read the one limit.
      expect(new Set(limits).size).toBe(1);
      // One decision per interval, whichever gateway took it: for this target 250 ms after a step of
      // slow start, 1 s after any other.
      expect(steps.length).toBeGreaterThanOrEqual(3);
      for (let i = 1; i < steps.length; i++) {
        const interval = steps[i - 1]?.reason.endsWith(", slow start") ? 250 : 1000;
        expect((steps[i]?.at_ms ?? 0) - (steps[i - 1]?.at_ms ?? 0)).toBeGreaterThanOrEqual(interval - 1);
      }
      // It grew from min, and stayed within its bounds.
      expect(Math.max(...steps.map((s) => s.limit_after))).toBeGreaterThan(MIN + 2);
      expect(Math.max(...samples.map((s) => s.running))).toBeLessThanOrEqual(MAX);
      // No claim goes past the limit: running jobs exceed the limit read in the same snapshot only
      // after a decrease, until the jobs started under the higher one settle.
      for (const s of samples) {
        const recent = samples.filter((o) => o.t <= s.t && o.t >= s.t - LONGEST_JOB_MS - 200);
        expect(s.running).toBeLessThanOrEqual(Math.max(...recent.map((o) => o.limit)));
      }
    }, 60_000);
  },
);
