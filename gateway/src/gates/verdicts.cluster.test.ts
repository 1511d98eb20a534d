import { durationMs } from "@bufbuild/protobuf/wkt";
import { type ClaimResponse, ThrottleReason } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Cluster,
  claimOnce,
  enqueueMany,
  sleepAtLeast,
  startCluster,
} from "../testing/cluster-harness.js";
import { haveService } from "../testing/services.js";

/** The one verdict of a response that claimed nothing, as `REASON` (or "jobs" when it claimed). */
function answer(res: ClaimResponse): string {
  if (res.jobs.length > 0) return "jobs";
  expect(res.throttled).toHaveLength(1);
  const v = res.throttled[0];
  return v ? (ThrottleReason[v.reason] ?? "?") : "?";
}

function retryAfterMs(res: ClaimResponse): number {
  const d = res.throttled[0]?.retryAfter;
  if (!d) throw new Error("verdict without retry_after");
  return durationMs(d);
}

describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "verdicts across three gateway instances",
  () => {
    let c: Cluster;
    beforeAll(async () => {
      c = await startCluster();
    });
    afterAll(async () => {
      await c?.stop();
    });

    /** Polls instance i, i + 1, … until one declines; returns that answer. */
    async function pollUntilDeclined(q: string, i: number): Promise<ClaimResponse> {
      for (let k = i; k < i + 20; k++) {
        const res = await claimOnce(c, k, q);
        if (res.jobs.length === 0) return res;
      }
      throw new Error(`${q}: never declined`);
    }

    /** Polls every instance once; returns each answer. */
    const everywhere = (q: string) => Promise.all(c.gateways.map((_, i) => claimOnce(c, i, q).then(answer)));

    /**
     * Each instance's answer after a settings verb ran on instance `acting`: that one answers with the
     * change on its very next claim; the others as soon as the change's NOTIFY reaches them (Postgres
     * delivers it from each listener's own backend process, so on a loaded machine a few ms apart),
     * which must be within 1 s.
     */
    const afterChange = async (q: string, acting: number, want: string) =>
      Promise.all(
        c.gateways.map(async (_, i) => {
          if (i === acting) return answer(await claimOnce(c, i, q));
          const until = Date.now() + 1000;
          for (;;) {
            const got = answer(await claimOnce(c, i, q));
            if (got === want || Date.now() > until) return got;
            await new Promise((r) => setTimeout(r, 20));
          }
        }),
      );

    it("pause answers before max_running, max_running before throttle, throttle before claim rate", async () => {
      const q = c.name("order");
      const admin = c.admins[0];
      if (!admin) throw new Error("no admin");
      // Every gate set so that each one would decline.
      await admin.ensureQueue({
        queue: q,
        profile: { max_running: 1, claim_rate_per_minute: 1, claim_burst: 1 },
      });
      await admin.setQueueThrottle({ queue: q, limit: 1, periodMs: 60_000 });
      await enqueueMany(c, q, 5);
      // One claim: running = max_running, the throttle slot and the only rate token are spent.
      expect(answer(await claimOnce(c, 0, q))).toBe("jobs");

      expect(await everywhere(q)).toEqual(["MAX_RUNNING", "MAX_RUNNING", "MAX_RUNNING"]);
      await admin.pauseQueue({ queue: q });
      expect(await afterChange(q, 0, "PAUSED")).toEqual(["PAUSED", "PAUSED", "PAUSED"]);
      await c.admins[2]?.resumeQueue({ queue: q });
      expect(await afterChange(q, 2, "MAX_RUNNING")).toEqual(["MAX_RUNNING", "MAX_RUNNING", "MAX_RUNNING"]);
      // Room under max_running: the throttle answers, then (throttle removed) the claim rate.
      await c.admins[1]?.setQueueConcurrency({ queue: q, maxRunning: 2 });
      expect(await afterChange(q, 1, "THROTTLE")).toEqual(["THROTTLE", "THROTTLE", "THROTTLE"]);
      await admin.deleteQueueThrottle({ queue: q });
      expect(await afterChange(q, 0, "RATE_LIMIT")).toEqual(["RATE_LIMIT", "RATE_LIMIT", "RATE_LIMIT"]);
      const running = await c.pg.query<{ n: number }>(
        "select count(*)::int as n from taskq.jobs where queue = $1 and state = 'running'",
        [q],
      );
      expect(running.rows[0]?.n).toBe(1);
    });

    it("a raw client that sleeps exactly the THROTTLE retry_after is admitted on its next poll", async () => {
      const q = c.name("retry-throttle");
      // A verb refuses a queue never seen: set it up first.
      await c.admins[0]?.ensureQueue({ queue: q });
      await c.admins[0]?.setQueueThrottle({ queue: q, limit: 2, periodMs: 1000 }); // one per 500 ms
      await enqueueMany(c, q, 100);
      expect(answer(await claimOnce(c, 0, q))).toBe("jobs");
      const waits: number[] = [];
      for (let i = 0; i < 10; i++) {
        // Declined on one instance, admitted on another after exactly retry_after. (A loaded machine
        // can take longer than the interval to send the poll after an admission: poll until declined.)
        const declined = await pollUntilDeclined(q, i + 1);
        expect(answer(declined)).toBe("THROTTLE");
        const ms = retryAfterMs(declined);
        waits.push(ms);
        expect(ms).toBeGreaterThan(0);
        expect(ms).toBeLessThanOrEqual(500);
        await sleepAtLeast(ms);
        expect(answer(await claimOnce(c, i + 2, q))).toBe("jobs");
      }
      console.log("THROTTLE retry_after (ms), each followed by an admitted poll:", waits.join(", "));
    });

    it("a raw client that sleeps exactly the RATE_LIMIT retry_after is admitted on its next poll", async () => {
      const q = c.name("retry-rate");
      await c.admins[0]?.ensureQueue({ queue: q, profile: { claim_rate_per_minute: 120, claim_burst: 1 } });
      await enqueueMany(c, q, 100);
      expect(answer(await claimOnce(c, 0, q))).toBe("jobs");
      const waits: number[] = [];
      for (let i = 0; i < 10; i++) {
        const declined = await pollUntilDeclined(q, i + 1);
        expect(answer(declined)).toBe("RATE_LIMIT");
        const ms = retryAfterMs(declined);
        waits.push(ms);
        expect(ms).toBeGreaterThan(0);
        expect(ms).toBeLessThanOrEqual(500);
        await sleepAtLeast(ms);
        expect(answer(await claimOnce(c, i + 2, q))).toBe("jobs");
      }
      console.log("RATE_LIMIT retry_after (ms), each followed by an admitted poll:", waits.join(", "));
    });
  },
);
