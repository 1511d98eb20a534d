import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  waitForClaims,
  windowSlackMs,
} from "../testing/cluster-harness.js";
import { haveService } from "../testing/services.js";

const RATE = 600; // per minute: one claim per 100 ms
const BURST = 10;
const T_MS = 60_000 / RATE;
const WINDOW_MS = 30_000;

describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "queue claim rate across three gateway instances",
  () => {
    let c: Cluster;
    beforeAll(async () => {
      c = await startCluster();
    });
    afterAll(async () => {
      await c?.stop();
    });

    it(`${RATE}/min, burst ${BURST}: 10/s ±2% over 30 s after the burst; no window above rate + burst`, async () => {
      const q = c.name("rate");
      await c.admins[0]?.ensureQueue({
        queue: q,
        profile: { claim_rate_per_minute: RATE, claim_burst: BURST },
      });
      await enqueueMany(c, q, 600);
      const fleet = await spawnFleet(c, { count: 12, queues: [q], concurrency: 4, handlerMs: 5 });
      let report: FleetReport | undefined;
      try {
        await waitForClaims(c, q);
        await new Promise((r) => setTimeout(r, WINDOW_MS + 1_000));
      } finally {
        report = await fleet.stop();
      }
      // The gate's admissions, in Redis TIME (exact), and the claims Postgres recorded.
      const admits = admitTimes(c, "rateTake", `queue:${q}`);
      const claims = await claimTimes(c, q);
      const a0 = admits[0] as number;
      // The initial burst is the first BURST admissions; after it, one per 100 ms.
      const burstSpanMs = (admits[BURST - 1] as number) - a0;
      const afterBurst = admits.slice(BURST).filter((t) => t <= a0 + WINDOW_MS).length;
      const achievedPerSec = afterBurst / (WINDOW_MS / 1000);
      const c0 = claims[0] as number;
      const claimsAfterBurst = claims.slice(BURST).filter((t) => t <= c0 + WINDOW_MS).length;
      console.log(`claim rate ${RATE}/min burst ${BURST}, 12 workers, 3 instances`, {
        burstSpanMs,
        admitsAfterBurstIn30s: afterBurst,
        achievedPerSec,
        admitGapMs: stats(gaps(admits.slice(BURST))),
        windowSlackMs: windowSlackMs(admits, BURST, T_MS),
        claimsAfterBurstIn30s: claimsAfterBurst,
        claimWindowSlackMs: Math.round(windowSlackMs(claims, BURST, T_MS) * 1000) / 1000,
        refunds: refunded(c, "rateRefund", `queue:${q}`),
        claims: claims.length,
        workers: report,
      });
      expect(achievedPerSec).toBeGreaterThanOrEqual(10 * 0.98);
      expect(achievedPerSec).toBeLessThanOrEqual(10 * 1.02);
      // No window [t_i, t_j] admits more than burst + floor((t_j - t_i) / T). Admit times are Redis
      // TIME floored to whole ms, so a window can read up to 1 ms shorter than it was.
      expect(windowSlackMs(admits, BURST, T_MS)).toBeLessThanOrEqual(1);
      // With a backlog every admission is one claimed job: nothing given back, nothing extra.
      expect(refunded(c, "rateRefund", `queue:${q}`)).toBe(0);
      expect(claims.length).toBe(admits.length);
      expect(Object.keys(report?.throttled ?? {})).toEqual(["RATE_LIMIT"]);
    }, 90_000);
  },
);
