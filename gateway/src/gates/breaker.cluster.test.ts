import { setTimeout as sleep } from "node:timers/promises";
import type { JobContext } from "@taskq/sdk";
import { ThrottleReason } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Cluster,
  claimOnce,
  enqueueMany,
  startCluster,
  startFleet,
} from "../testing/cluster-harness.js";
import { haveService } from "../testing/services.js";

/** The breaker is one row per queue in Postgres: every gateway instance sees (and serializes on) it. */
describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "circuit breaker across three gateway instances",
  () => {
    let c: Cluster;
    beforeAll(async () => {
      c = await startCluster();
    });
    afterAll(async () => {
      await c?.stop();
    });

    const state = async (q: string) => {
      const r = await c.pg.query<{ breaker_state: string; breaker_tripped_at: Date | null; opened: number }>(
        "select breaker_state, breaker_tripped_at, breaker_opened_total as opened from taskq.queue_flow where queue = $1",
        [q],
      );
      return r.rows[0];
    };

    it("30 workers polling a queue whose cooldown is over, at once on 3 instances: exactly one probe", async () => {
      const q = c.name("probe");
      // A verb refuses a queue never seen: set it up first.
      await c.admins[0]?.ensureQueue({ queue: q });
      const admin = c.admins[0];
      if (!admin) throw new Error("no admin");
      await admin.setBreakerConfig({
        queue: q,
        failureThreshold: 1,
        cooldownSeconds: 1,
        halfOpenSuccesses: 1,
      });
      await enqueueMany(c, q, 200);
      const rounds: { probes: number; verdicts: Record<string, number> }[] = [];
      for (let round = 0; round < 5; round++) {
        await admin.tripBreaker({ queue: q }); // open again with a fresh cooldown, no probe out
        await sleep(1050);
        // 30 raw claims of up to 5 jobs each, 10 per instance, all in flight together.
        const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => claimOnce(c, i, q, 5)));
        const verdicts: Record<string, number> = {};
        for (const a of answers)
          for (const v of a.throttled) {
            const k = ThrottleReason[v.reason] ?? "?";
            verdicts[k] = (verdicts[k] ?? 0) + 1;
          }
        rounds.push({ probes: answers.reduce((s, a) => s + a.jobs.length, 0), verdicts });
        expect((await state(q))?.breaker_state).toBe("half_open");
      }
      console.log("breaker probe, 30 concurrent claims over 3 instances, 5 rounds", rounds);
      for (const r of rounds) {
        expect(r.probes).toBe(1);
        expect(r.verdicts).toEqual({ BREAKER_PROBING: 29 });
      }
    }, 60_000);

    it("outage: 20 workers, threshold 5 — trips fast, burns almost nothing while down, one probe per cooldown, closes after recovery", async () => {
      const q = c.name("outage");
      // A verb refuses a queue never seen: set it up first.
      await c.admins[0]?.ensureQueue({ queue: q });
      const admin = c.admins[0];
      if (!admin) throw new Error("no admin");
      const WORKERS = 20;
      const COOLDOWN_S = 1;
      await admin.setBreakerConfig({
        queue: q,
        failureThreshold: 5,
        cooldownSeconds: COOLDOWN_S,
        halfOpenSuccesses: 1,
      });
      for (let i = 0; i < 12_000; i += 1000)
        await c.client.enqueueBatch(
          Array.from({ length: 1000 }, () => ({ queue: q, payload: {}, maxAttempts: 1 })),
        );

      // The downstream: healthy, down from 2 s to 5 s, then healthy again.
      const starts: number[] = [];
      let t0 = 0;
      const downAt = () => t0 + 2000;
      const upAt = () => t0 + 5000;
      const handler = async (_job: JobContext) => {
        const at = Date.now();
        starts.push(at);
        await sleep(20);
        if (at >= downAt() && at < upAt()) throw new Error("downstream unavailable");
      };
      t0 = Date.now();
      const fleet = await startFleet(c, { count: WORKERS, queues: [q], handler });
      try {
        await sleep(7500);
      } finally {
        await fleet.stop();
      }
      const events = await c.pg.query<{ event_type: string; at: string; data: Record<string, unknown> }>(
        `select e.event_type, (extract(epoch from e.created_at) * 1000)::float8::text as at, e.data
         from taskq.job_events e join taskq.jobs j on j.id = e.job_id where j.queue = $1 order by e.id`,
        [q],
      );
      const ev = events.rows.map((e) => ({ type: e.event_type, at: Number(e.at), trigger: e.data.trigger }));
      const opened = ev.find((e) => e.type === "breaker_opened");
      if (!opened) throw new Error(`never opened: ${JSON.stringify(ev)}`);
      const closed = ev.find((e) => e.type === "breaker_closed");
      const reopened = ev.filter((e) => e.type === "breaker_reopened");
      const burned = starts.filter((t) => t > opened.at && t < upAt()).length;
      const probesAllowed = Math.ceil((upAt() - opened.at) / (COOLDOWN_S * 1000)) + 1;
      const beforeTrip = starts.filter((t) => t >= downAt() && t <= opened.at).length;
      const report = {
        timeToTripMs: Math.round(opened.at - downAt()),
        failedStartsBeforeTrip: beforeTrip,
        claimedAfterTripWhileDown: burned,
        bound: `${WORKERS} in flight + ${probesAllowed} probes`,
        reopened: reopened.length,
        closedAfterRecoveryMs: closed ? Math.round(closed.at - upAt()) : null,
        handled: starts.length,
        throttled: fleet.throttled(),
        final: (await state(q))?.breaker_state,
      };
      console.log("breaker outage simulation, 3 instances", report);
      expect(opened.trigger).toBe("streak");
      expect(burned).toBeLessThanOrEqual(WORKERS + probesAllowed);
      expect(reopened.length).toBeGreaterThanOrEqual(1); // probes during the outage failed
      expect(closed?.at).toBeGreaterThan(upAt());
      expect(report.closedAfterRecoveryMs).toBeLessThanOrEqual(COOLDOWN_S * 1000 + 1500);
      expect(report.final).toBe("closed");
      expect(starts.filter((t) => t > (closed?.at ?? 0)).length).toBeGreaterThan(100); // work resumed
    }, 60_000);
  },
);
