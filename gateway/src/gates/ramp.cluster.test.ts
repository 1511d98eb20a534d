import { timestampMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Cluster,
  claimTimes,
  enqueueMany,
  type FleetReport,
  spawnFleet,
  startCluster,
} from "../testing/cluster-harness.js";
import { haveService } from "../testing/services.js";

const RATE = 3000; // per minute: 50/s at full rate
const BURST = 10;
const RAMP_S = 10;
const PER_MS = RATE / 60_000;

describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "slow-start ramp across three gateway instances",
  () => {
    let c: Cluster;
    beforeAll(async () => {
      // Workers look at a paused queue again every 100 ms rather than every second.
      c = await startCluster({ config: { pausedRetryMs: 100 } });
    });
    afterAll(async () => {
      await c?.stop();
    });

    it(`${RATE}/min with ramp_seconds ${RAMP_S}, paused then resumed: <= 25% in the first 2 s, full by 10 s`, async () => {
      const q = c.name("ramp");
      await c.admins[0]?.ensureQueue({
        queue: q,
        profile: { claim_rate_per_minute: RATE, claim_burst: BURST, ramp_seconds: RAMP_S },
      });
      await c.admins[0]?.pauseQueue({ queue: q });
      await enqueueMany(c, q, 2500);
      const fleet = await spawnFleet(c, { count: 9, queues: [q], concurrency: 10, handlerMs: 5 });
      let report: FleetReport | undefined;
      let rampStart = 0;
      try {
        await new Promise((r) => setTimeout(r, 1_000));
        const resumed = await c.admins[1]?.resumeQueue({ queue: q });
        const at = resumed?.queue?.rampStartedAt;
        if (!at) throw new Error("resume did not start the ramp");
        rampStart = timestampMs(at);
        await new Promise((r) => setTimeout(r, Math.max(0, rampStart + 13_200 - Date.now())));
      } finally {
        report = await fleet.stop();
      }
      const claims = (await claimTimes(c, q)).map((t) => t - rampStart);
      const inRange = (from: number, to: number) => claims.filter((t) => t >= from && t < to).length;
      const perSecond = Array.from({ length: 13 }, (_, s) => inRange(s * 1000, (s + 1) * 1000));
      // Claims the ramp allows by t ms (rate rising linearly from 0): rate * t^2 / (2 * window) + 1.
      const rampAllows = (t: number) => Math.floor((PER_MS * t * t) / (2 * RAMP_S * 1000)) + 1;
      const first2s = inRange(Number.NEGATIVE_INFINITY, 2000);
      const after10s = inRange(10_000, 13_000);
      console.log(`ramp ${RAMP_S} s to ${RATE}/min (burst ${BURST}), 9 workers, 3 instances`, {
        before: claims.filter((t) => t < 0).length,
        first2s,
        rampAllowsBy2s: rampAllows(2000),
        perSecond,
        after10sPer3s: after10s,
        workers: report,
      });
      expect(claims.filter((t) => t < 0).length).toBe(0);
      // At most 25% of the full rate over the first 2 s (the ramp's own curve allows ~11 of 100).
      expect(first2s).toBeLessThanOrEqual(0.25 * (RATE / 60) * 2);
      // Full rate from 10 s on: 50/s, within 5% below and burst above.
      expect(after10s).toBeGreaterThanOrEqual(0.95 * (RATE / 60) * 3);
      expect(after10s).toBeLessThanOrEqual((RATE / 60) * 3 + BURST + 1);
      expect(report?.throttled.PAUSED ?? 0).toBeGreaterThan(0);
      expect(report?.throttled.RAMPING ?? 0).toBeGreaterThan(0);
    }, 90_000);
  },
);
