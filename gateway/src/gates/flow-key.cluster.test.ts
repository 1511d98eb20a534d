import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  admitTimes,
  type Cluster,
  enqueueMany,
  spawnFleet,
  startCluster,
  windowSlackMs,
} from "../testing/cluster-harness.js";
import { haveService } from "../testing/services.js";

const KEYS = 99; // unlimited keys, besides the limited one
const PER_KEY = 10;
const OTHERS = KEYS * PER_KEY;
const LIMITED_JOBS = 1000;
const RATE = 60; // per minute
const BURST = 5;

describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "flow keys across three gateway instances",
  () => {
    let c: Cluster;
    beforeAll(async () => {
      c = await startCluster();
    });
    afterAll(async () => {
      await c?.stop();
    });

    /** Drains the other keys' jobs of `queue` with a fresh fleet; ms from start to the last one done. */
    async function drainOthers(queue: string, limited: string): Promise<{ ms: number; stoppedAt: number }> {
      const start = Date.now();
      const fleet = await spawnFleet(c, { count: 12, queues: [queue], concurrency: 5, handlerMs: 20 });
      try {
        for (;;) {
          const r = await c.pg.query<{ n: number }>(
            `select count(*)::int as n from taskq.jobs
             where queue = $1 and state = 'succeeded' and flow_key is distinct from $2`,
            [queue, limited],
          );
          if ((r.rows[0]?.n ?? 0) >= OTHERS) break;
          if (Date.now() - start > 60_000) throw new Error(`${queue}: other keys not drained in 60 s`);
          await new Promise((res) => setTimeout(res, 10));
        }
        const last = await c.pg.query<{ t: string }>(
          `select (extract(epoch from max(finished_at)) * 1000)::float8::text as t from taskq.jobs
           where queue = $1 and flow_key is distinct from $2`,
          [queue, limited],
        );
        return { ms: Number(last.rows[0]?.t) - start, stoppedAt: Date.now() };
      } finally {
        await fleet.stop();
      }
    }

    it("a limited key with 1,000 jobs queued ahead never holds back 99 other keys, and gets only its rate", async () => {
      const limited = c.name("limited-key");
      await c.admins[0]?.setFlowLimit({ flowKey: limited, ratePerMinute: RATE, burst: BURST });
      const keys = Array.from({ length: KEYS }, (_, k) => c.name(`key-${k}`));
      const others = (i: number) => ({ flowKey: keys[i % KEYS] });

      // Baseline: the other keys' jobs alone.
      const base = c.name("flow-base");
      await enqueueMany(c, base, OTHERS, others);
      const baseline = await drainOthers(base, limited);

      // The same backlog behind 1,000 jobs of the limited key (enqueued first, so ahead in line).
      const q = c.name("flow");
      await enqueueMany(c, q, LIMITED_JOBS, () => ({ flowKey: limited }));
      await enqueueMany(c, q, OTHERS, others);
      const startedAt = Date.now();
      const withLimited = await drainOthers(q, limited);

      const lim = await c.pg.query<{ state: string; n: number }>(
        "select state, count(*)::int as n from taskq.jobs where queue = $1 and flow_key = $2 group by state",
        [q, limited],
      );
      const limitedStarted = lim.rows.filter((r) => r.state !== "queued").reduce((s, r) => s + r.n, 0);
      const admits = admitTimes(c, "rateTake", `flow:${limited}`);
      const spanMs = withLimited.stoppedAt - startedAt;
      console.log("flow keys: 1 limited (60/min, burst 5) ahead of 99 unlimited", {
        otherJobs: OTHERS,
        baselineMs: baseline.ms,
        withLimitedMs: withLimited.ms,
        ratio: Math.round((withLimited.ms / baseline.ms) * 100) / 100,
        limitedClaimed: limitedStarted,
        limitedAdmits: admits.length,
        limitedAllowed: BURST + Math.floor(spanMs / 1000),
        windowSlackMs: admits.length > BURST ? windowSlackMs(admits, BURST, 60_000 / RATE) : null,
        limitedStates: lim.rows,
      });
      // Full speed for the others: no slower than the baseline, give or take scheduling noise.
      expect(withLimited.ms).toBeLessThanOrEqual(baseline.ms * 1.5 + 500);
      // The limited key got no more than its rate plus burst over the run, in every window.
      expect(limitedStarted).toBe(admits.length);
      expect(limitedStarted).toBeLessThanOrEqual(BURST + Math.floor(spanMs / 1000));
      if (admits.length > BURST) expect(windowSlackMs(admits, BURST, 60_000 / RATE)).toBeLessThanOrEqual(1);
    }, 150_000);
  },
);
