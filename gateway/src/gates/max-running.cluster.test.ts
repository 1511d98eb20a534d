import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Cluster,
  enqueueMany,
  type FleetReport,
  spawnFleet,
  startCluster,
  waitForClaims,
} from "../testing/cluster-harness.js";
import { haveService } from "../testing/services.js";

const CAP = 5;
const SAMPLE_MS = 10;
const SAMPLES = 500; // 5 s

describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "max_running across three gateway instances",
  () => {
    let c: Cluster;
    beforeAll(async () => {
      c = await startCluster();
    });
    afterAll(async () => {
      await c?.stop();
    });

    it(`max_running ${CAP}, 50 workers, 50 ms jobs: never above ${CAP}, and the cap is used`, async () => {
      const q = c.name("maxrun");
      await c.admins[0]?.ensureQueue({ queue: q, profile: { max_running: CAP } });
      await enqueueMany(c, q, 2000);
      const fleet = await spawnFleet(c, { count: 50, queues: [q], concurrency: 1, handlerMs: 50 });
      const samples: number[] = [];
      let report: FleetReport | undefined;
      try {
        await waitForClaims(c, q, CAP);
        // Running jobs of the queue as Postgres has them, every 10 ms.
        const start = performance.now();
        for (let i = 0; i < SAMPLES; i++) {
          const r = await c.pg.query<{ n: number }>(
            "select count(*)::int as n from taskq.jobs where queue = $1 and state = 'running'",
            [q],
          );
          samples.push(r.rows[0]?.n ?? 0);
          const wait = start + (i + 1) * SAMPLE_MS - performance.now();
          if (wait > 0) await new Promise((res) => setTimeout(res, wait));
        }
      } finally {
        report = await fleet.stop();
      }
      const mean = samples.reduce((s, x) => s + x, 0) / samples.length;
      const hist: Record<number, number> = {};
      for (const s of samples) hist[s] = (hist[s] ?? 0) + 1;
      const done = await c.pg.query<{ n: number }>(
        "select count(*)::int as n from taskq.jobs where queue = $1 and state = 'succeeded'",
        [q],
      );
      console.log(`max_running ${CAP}, 50 workers, 50 ms jobs, 3 instances`, {
        samples: samples.length,
        max: Math.max(...samples),
        mean: Math.round(mean * 1000) / 1000,
        histogram: hist,
        succeeded: done.rows[0]?.n,
        workers: report,
      });
      expect(Math.max(...samples)).toBeLessThanOrEqual(CAP);
      expect(mean).toBeGreaterThanOrEqual(4.5);
      expect(Object.keys(report?.throttled ?? {})).toEqual(["MAX_RUNNING"]);
    }, 60_000);
  },
);
