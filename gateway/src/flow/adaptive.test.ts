import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors.js";
import { type Db, pgliteDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import { QueueStore } from "../store/queue-store.js";
import { Store } from "../store/store.js";
import type { ClaimedJob } from "../store/types.js";
import { newJob } from "../testing/new-job.js";
import { knownQueues } from "../testing/services.js";

const ACTOR = "operator:test";

/**
 * The adaptive limit's law on an injected clock: settles carry their duration (the latency the law
 * reads), and each decision is taskq.adapt_concurrency at an explicit `now`, one interval (1 s for
 * targets under a second) after the one before. Verbs stamp the first decision with the database's
 * now(); the injected clock starts there.
 */
describe("adaptive max_running (law, injected clock)", () => {
  let db: Db;
  let store: Store;
  let queues: QueueStore;
  /** The last decision's time: the verb's, then each one decide() injects. */
  let base = 0;
  let tick = 0;
  /** The next decision, one interval after the previous one. */
  const decide = () => store.adaptConcurrency(new Date(base + 1100 * ++tick));

  beforeAll(async () => {
    db = await pgliteDb();
    await migrate(db);
    store = new Store(db);
    queues = new QueueStore(db);
  });
  afterAll(() => db.close());

  const setUp = async (q: string, min: number, max: number, targetMs: number, jobs = 200) => {
    await knownQueues(db, q);
    await queues.queueEnsure(q, { max_running: 50 }, ACTOR);
    const on = await queues.queueSetAdaptive(q, min, max, targetMs, ACTOR);
    base = Date.parse(on.adaptive?.decided_at ?? "");
    await store.jobsEnqueue(Array.from({ length: jobs }, () => newJob(q, { maxAttempts: 1 })));
    tick = 0;
  };
  const claim = async (q: string, n: number): Promise<ClaimedJob[]> => {
    const r = await store.jobsClaimMany({
      queues: [q],
      polls: [{ limit: n, leaseMs: 60_000, workerId: "w" }],
    });
    return r.jobs[0] ?? [];
  };
  /**
   * The settles of a step's own jobs: stamped just before the queue's next decision is due, past the
   * interval's first part, whose settles (of jobs started before the step) the controller does not read.
   */
  const settleTime = async (q: string) => {
    const [r] = await db.query<{ at: Date | string }>(
      {
        name: "",
        text: `select q.adaptive_decided_at + taskq.adaptive_interval(q.adaptive_target_latency_ms,
                 q.adaptive_slow_start) - interval '1 millisecond' as at from taskq.queues q where q.name = $1`,
      },
      [q],
    );
    return r ? new Date(r.at) : undefined;
  };
  const settle = async (jobs: readonly ClaimedJob[], ok: boolean, durationMs: number) =>
    jobs.length === 0 ? [] : settleAt(jobs, ok, durationMs, await settleTime(jobs[0]?.queue ?? ""));
  const settleAt = (jobs: readonly ClaimedJob[], ok: boolean, durationMs: number, at: Date | undefined) =>
    store.jobsSettle(
      jobs.map((j) =>
        ok
          ? {
              jobId: j.id,
              attempt: j.attempt,
              kind: "success" as const,
              result: new Uint8Array(),
              durationMs,
            }
          : {
              jobId: j.id,
              attempt: j.attempt,
              kind: "failure" as const,
              error: { type: "Down", message: "503", retryable: false },
              delayMs: null,
              durationMs,
            },
      ),
      at,
    );
  /** Running jobs held at the limit: claims up to it, so the limit is in use. */
  const held: ClaimedJob[] = [];
  const fill = async (q: string) => {
    held.push(...(await claim(q, 1000)));
  };
  /** Settles `n` of the held jobs (ok, at `ms`), then fills up to the limit again. */
  const cycle = async (q: string, n: number, ms: number, ok = true) => {
    await settle(held.splice(0, n), ok, ms);
    await fill(q);
  };
  const limit = async (q: string) => (await queues.queueGet(q)).max_running;
  const adaptive = async (q: string) => (await queues.queueGet(q)).adaptive;
  const changes = (q: string) => queues.adaptiveChanges(q, null);
  const drain = async () => {
    await settle(held.splice(0), true, 1);
  };

  it("the law itself: each rule of taskq.adaptive_step, with no clock at all", async () => {
    const step = async (...a: (number | boolean | null)[]) => {
      const [r] = await db.query<{ next_limit: number; slow_start: boolean; reason: string }>(
        { name: "", text: "select * from taskq.adaptive_step($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)" },
        a,
      );
      return r;
    };
    // limit, min, max, target, slow_start, settles, failures, avg ms, running, cap
    expect(await step(10, 2, 50, 500, false, 0, 0, null, 10, 10)).toMatchObject({
      next_limit: 10,
      reason: "no settles since the last decision",
    });
    expect(await step(10, 2, 50, 500, false, 40, 0, 120, 10, 10)).toMatchObject({
      next_limit: 11,
      reason: "latency 120 ms under target 500",
    });
    expect(await step(20, 2, 50, 500, true, 40, 0, 120, 20, 20)).toMatchObject({
      next_limit: 25,
      slow_start: true,
    });
    expect(await step(14, 2, 200, 500, true, 40, 0, 620, 14, 14)).toMatchObject({
      next_limit: 11, // 14 x 0.806 (target / latency)
      slow_start: false,
      reason: "latency 620 ms over target 500",
    });
    expect((await step(40, 2, 200, 500, false, 40, 0, 510, 40, 40))?.next_limit).toBe(36); // at most x0.9
    expect((await step(40, 2, 200, 500, false, 40, 0, 5000, 40, 40))?.next_limit).toBe(28); // at least x0.7
    expect(await step(40, 2, 200, 500, true, 40, 0, 480, 40, 40)).toMatchObject({
      next_limit: 40,
      slow_start: true,
      reason: "latency 480 ms within 5% of target 500",
    });
    expect((await step(40, 2, 200, 500, false, 40, 0, 475, 40, 40))?.next_limit).toBe(41); // 95%: grows
    expect(await step(40, 2, 200, 500, false, 40, 2, 100, 40, 40)).toMatchObject({
      next_limit: 28,
      reason: "failures 2 of 40 settles (5%)",
    });
    expect((await step(40, 2, 200, 500, false, 40, 1, 100, 40, 40))?.next_limit).toBe(41); // 2.5%: low
    expect(await step(2, 2, 200, 500, false, 10, 5, 100, 2, 2)).toMatchObject({
      next_limit: 2,
      reason: "failures 5 of 10 settles (50%), at min 2",
    });
    expect(await step(3, 2, 200, 500, false, 10, 0, 900, 3, 3)).toMatchObject({ next_limit: 2 }); // at least -1
    expect(await step(200, 2, 200, 500, false, 10, 0, 100, 200, 200)).toMatchObject({
      next_limit: 200,
      reason: "latency 100 ms under target 500, at max 200",
    });
    expect(await step(20, 2, 200, 500, false, 10, 0, 100, 15, 20)).toMatchObject({
      next_limit: 20,
      reason: "latency 100 ms under target 500, limit not in use (15 running of 20)",
    });
    expect((await step(20, 2, 200, 500, false, 10, 0, 100, 16, 20))?.next_limit).toBe(21); // 80% is in use
    expect((await step(20, 2, 200, 500, false, 10, 0, 100, 5, 5))?.reason).toBe(
      "latency 100 ms under target 500, limit not in use (5 running of 20, the ramp's cap 5)",
    );
  });

  it("starts at min in slow start, grows while latency is under target and the limit in use, and backs off on latency and on failures", async () => {
    const q = "grow";
    await setUp(q, 2, 10, 500);
    expect(await limit(q)).toBe(2);
    expect(await adaptive(q)).toMatchObject({
      min: 2,
      max: 10,
      target_latency_ms: 500,
      fixed_max_running: 50,
    });
    await fill(q);
    expect(held).toHaveLength(2); // the claim path enforces the adaptive limit as any max_running
    await cycle(q, 1, 100);
    expect(await decide()).toBe(1);
    expect(await limit(q)).toBe(3); // slow start: x1.25, at least +1
    await fill(q);
    await cycle(q, 2, 100);
    await decide();
    expect(await limit(q)).toBe(4);
    await fill(q);
    await cycle(q, 2, 100);
    await decide();
    expect(await limit(q)).toBe(5);
    // Latency over target: back off by target / latency (at least x0.7), and slow start ends.
    await fill(q);
    await cycle(q, 2, 900);
    await decide();
    expect(await limit(q)).toBe(3);
    expect(await adaptive(q)).toMatchObject({ slow_start: false, reason: "latency 900 ms over target 500" });
    // Healthy again: +1 at a time now.
    await cycle(q, 3, 100);
    await decide();
    expect(await limit(q)).toBe(4);
    await fill(q);
    await cycle(q, 4, 100);
    await decide();
    expect(await limit(q)).toBe(5);
    // A failure burst: x0.7 even with latency under target.
    await fill(q);
    await cycle(q, 2, 100, false);
    await decide();
    expect(await limit(q)).toBe(3);
    expect((await adaptive(q))?.reason).toBe("failures 2 of 2 settles (100%)");
    expect((await changes(q)).map((c) => [c.limit_before, c.limit_after])).toEqual([
      [5, 3],
      [4, 5],
      [3, 4],
      [5, 3],
      [4, 5],
      [3, 4],
      [2, 3],
      [50, 2],
    ]);
    await drain();
  });

  it("one decision per interval, whoever calls: a second call within it changes nothing and takes no settles", async () => {
    const q = "interval";
    await setUp(q, 2, 10, 500);
    await fill(q);
    await cycle(q, 2, 100);
    const first = new Date(base + 1100);
    expect(await store.adaptConcurrency(first)).toBe(1);
    await fill(q);
    await cycle(q, 3, 100);
    // 900 ms later: inside the 1 s interval, so nothing is decided and the samples stay.
    expect(await store.adaptConcurrency(new Date(first.getTime() + 900))).toBe(0);
    expect(await limit(q)).toBe(3);
    expect(await store.adaptConcurrency(new Date(first.getTime() + 1000))).toBe(1);
    expect(await limit(q)).toBe(4);
    // Nothing settled since: hold, and say so.
    expect(await store.adaptConcurrency(new Date(first.getTime() + 2000))).toBe(0);
    expect((await adaptive(q))?.reason).toBe("no settles since the last decision");
    await drain();
  });

  it("reads only the settles past an interval's first part (the target, at most half of it): the others are of jobs started before the last step", async () => {
    const q = "first-part";
    await setUp(q, 2, 10, 500); // interval 1 s, its first 500 ms not read
    await fill(q);
    // Slow settles 400 ms after the verb's decision: taken, not read.
    await settleAt(held.splice(0, 2), true, 900, new Date(base + 400));
    await fill(q);
    expect(await store.adaptConcurrency(new Date(base + 1000))).toBe(0);
    expect(await limit(q)).toBe(2);
    expect((await adaptive(q))?.reason).toBe("no settles since the last decision");
    // Fast ones 600 ms after it: read. The slow ones are gone, so the limit grows.
    await settleAt(held.splice(0, 2), true, 100, new Date(base + 1600));
    await fill(q);
    expect(await store.adaptConcurrency(new Date(base + 2000))).toBe(1);
    expect(await limit(q)).toBe(3);
    await drain();
  });

  it("decides a failure burst at once, before its interval has passed; fewer than 3 failures wait for it", async () => {
    const q = "burst";
    await setUp(q, 2, 10, 500);
    for (let i = 0; i < 3; i++) {
      await fill(q);
      await cycle(q, held.length, 100);
      await decide();
    }
    expect(await limit(q)).toBe(5);
    const last = base + 1100 * tick;
    await fill(q);
    await settleAt(held.splice(0, 2), false, 5, new Date(last + 600));
    await fill(q);
    expect(await store.adaptConcurrency(new Date(last + 700))).toBe(0);
    await settleAt(held.splice(0, 1), false, 5, new Date(last + 650));
    await fill(q);
    expect(await store.adaptConcurrency(new Date(last + 700))).toBe(1);
    expect(await limit(q)).toBe(3); // x0.7
    expect((await adaptive(q))?.reason).toBe("failures 3 of 3 settles (100%)");
    await drain();
  });

  it("in slow start a short target decides every twice the target (at least 250 ms), then every second", async () => {
    const q = "short-target";
    await setUp(q, 2, 50, 150);
    await fill(q);
    await cycle(q, 2, 100);
    // Slow start: 2 x 150 ms = 300 ms apart.
    expect(await store.adaptConcurrency(new Date(base + 299))).toBe(0);
    expect(await store.adaptConcurrency(new Date(base + 300))).toBe(1);
    expect(await limit(q)).toBe(3);
    await cycle(q, 3, 400); // over the target: the first decrease ends slow start
    expect(await store.adaptConcurrency(new Date(base + 600))).toBe(1);
    expect(await limit(q)).toBe(2);
    expect(await adaptive(q)).toMatchObject({ slow_start: false });
    await cycle(q, 2, 100);
    // Past slow start, the interval is 1 s whatever the target.
    expect(await store.adaptConcurrency(new Date(base + 1599))).toBe(0);
    expect(await store.adaptConcurrency(new Date(base + 1600))).toBe(1);
    expect(await limit(q)).toBe(3);
    await drain();
    const tiny = "tiny-target";
    await setUp(tiny, 2, 50, 10);
    await fill(tiny);
    await cycle(tiny, 2, 5);
    // 2 x 10 ms is under the floor of 250 ms.
    expect(await store.adaptConcurrency(new Date(base + 249))).toBe(0);
    expect(await store.adaptConcurrency(new Date(base + 250))).toBe(1);
    await drain();
  });

  it("a target of several seconds decides once per target, one of hours once a minute", async () => {
    const q = "slow-jobs";
    await setUp(q, 2, 10, 3000);
    await fill(q);
    await cycle(q, 1, 1000);
    expect(await store.adaptConcurrency(new Date(base + 2000))).toBe(0);
    expect(await store.adaptConcurrency(new Date(base + 3100))).toBe(1);
    await drain();
    const hours = "hour-jobs";
    await setUp(hours, 2, 10, 3_600_000);
    await fill(hours);
    await cycle(hours, 1, 1000);
    expect(await store.adaptConcurrency(new Date(base + 59_000))).toBe(0);
    expect(await store.adaptConcurrency(new Date(base + 60_100))).toBe(1);
    await drain();
  });

  it("stays within its bounds: holds at max, and at min however slow the downstream is", async () => {
    const q = "bounds";
    await setUp(q, 2, 3, 500);
    await fill(q);
    await cycle(q, 2, 100);
    await decide();
    expect(await limit(q)).toBe(3);
    await fill(q);
    await cycle(q, 3, 100);
    await decide();
    expect(await limit(q)).toBe(3);
    expect((await adaptive(q))?.reason).toBe("latency 100 ms under target 500, at max 3");
    await cycle(q, 3, 5000);
    await decide();
    expect(await limit(q)).toBe(2);
    await cycle(q, 2, 5000);
    await decide();
    expect(await limit(q)).toBe(2);
    expect((await adaptive(q))?.reason).toBe("latency 5000 ms over target 500, at min 2");
    await drain();
  });

  it("an idle queue's limit does not grow: under 80% of it running, it holds", async () => {
    const q = "idle";
    await setUp(q, 4, 10, 500);
    const [one] = await claim(q, 1);
    if (!one) throw new Error("no job");
    await settle([one], true, 50);
    await claim(q, 1); // one running of 4
    await decide();
    expect(await limit(q)).toBe(4);
    expect((await adaptive(q))?.reason).toBe(
      "latency 50 ms under target 500, limit not in use (1 running of 4)",
    );
  });

  it("restarts from min in slow start after the breaker closes; holds while it is open", async () => {
    const q = "breaker";
    await setUp(q, 2, 20, 500);
    await queues.breakerConfig(q, 1, 1, 1, ACTOR);
    for (let i = 0; i < 4; i++) {
      await fill(q);
      await cycle(q, held.length, 100);
      await decide();
    }
    const before = (await limit(q)) ?? 0;
    expect(before).toBeGreaterThan(4);
    await queues.breakerTrip(q, ACTOR);
    await cycle(q, held.length, 100);
    await decide();
    expect(await limit(q)).toBe(before);
    expect((await adaptive(q))?.reason).toBe("held while the breaker is open");
    await queues.breakerClose(q, ACTOR);
    expect(await limit(q)).toBe(2);
    expect(await adaptive(q)).toMatchObject({
      slow_start: true,
      reason: "restarted from min 2 after the breaker was closed by operator:test",
    });
    // A probe success closing it restarts it too.
    await fill(q);
    await cycle(q, held.length, 100);
    await decide();
    expect(await limit(q)).toBe(3);
    await queues.breakerTrip(q, ACTOR);
    await drain();
    await new Promise((r) => setTimeout(r, 1100)); // the 1 s cooldown, on the database's clock
    const [probe] = await claim(q, 5);
    if (!probe) throw new Error("no probe");
    await settle([probe], true, 10);
    expect((await queues.queueGet(q)).breaker?.state).toBe("closed");
    expect(await limit(q)).toBe(2);
    expect((await adaptive(q))?.reason).toBe("restarted from min 2 after the breaker closed");
  });

  it("set_adaptive_concurrency: each bad field named, nothing written; audited; off restores the operator's cap", async () => {
    const q = "verb";
    await knownQueues(db, q);
    await queues.queueEnsure(q, { max_running: 7 }, ACTOR);
    const audits = async () =>
      (await queues.auditList(q, 200, null)).filter((a) => a.event_type === "queue.adaptive_concurrency");
    const bad: [Promise<unknown>, string, string][] = [
      [queues.queueSetAdaptive(q, 0, 10, 500, ACTOR), "min", "must be from 1 to 1000000 (got 0)"],
      [
        queues.queueSetAdaptive(q, 2, 1_000_001, 500, ACTOR),
        "max",
        "must be from 1 to 1000000 (got 1000001)",
      ],
      [queues.queueSetAdaptive(q, 5, 4, 500, ACTOR), "max", "must be at least min (5, got 4)"],
      [queues.queueSetAdaptive(q, 2, null, 500, ACTOR), "max", "is required with min"],
      [queues.queueSetAdaptive(q, 2, 10, null, ACTOR), "target_latency_ms", "is required with min"],
      [queues.queueSetAdaptive(q, 2, 10, 0, ACTOR), "target_latency_ms", "must be from 1 to 3600000 (got 0)"],
      [
        queues.queueSetAdaptive(q, null, 10, null, ACTOR),
        "max",
        "needs min (a null min turns the adaptive limit off)",
      ],
      [
        queues.queueSetAdaptive(q, 2.5, 10, 500, ACTOR),
        "min",
        "must be a whole number in its range (got 2.5)",
      ],
      [queues.queueSetAdaptive(q, 2, 10, 500, ""), "actor", "must be 1 to 255 characters"],
    ];
    for (const [call, field, message] of bad) {
      const err = await call.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err).toMatchObject({ field, message: `${field} ${message}` });
    }
    expect(await audits()).toEqual([]);
    expect(await queues.queueGet(q)).toMatchObject({ max_running: 7, adaptive: null });
    expect(await changes(q)).toEqual([]);

    const on = await queues.queueSetAdaptive(q, 2, 200, 500, "operator:admin");
    expect(on).toMatchObject({
      max_running: 2,
      adaptive: { min: 2, max: 200, target_latency_ms: 500, fixed_max_running: 7, slow_start: true },
    });
    const [flow] = await db.query<Record<string, unknown>>(
      {
        name: "",
        text: `select max_running, adaptive_min, adaptive_max, adaptive_target_latency_ms, adaptive_fixed_max_running,
                 adaptive_reason from taskq.queue_flow where queue = $1`,
      },
      [q],
    );
    expect(flow).toEqual({
      max_running: 2,
      adaptive_min: 2,
      adaptive_max: 200,
      adaptive_target_latency_ms: 500,
      adaptive_fixed_max_running: 7,
      adaptive_reason: "turned on by operator:admin: starts at min 2",
    });
    // While adaptive, a fixed cap (verb or profile) changes the value kept aside, not the limit.
    expect(await queues.queueSetConcurrency(q, 9, ACTOR)).toMatchObject({
      max_running: 2,
      adaptive: { fixed_max_running: 9 },
    });
    expect(await queues.queueEnsure(q, { max_running: 11 }, ACTOR)).toMatchObject({
      max_running: 2,
      adaptive: { fixed_max_running: 11 },
    });
    expect(await queues.queueEnsure(q, { ramp_seconds: 5 }, ACTOR)).toMatchObject({
      max_running: 2,
      adaptive: { fixed_max_running: 11 },
    });
    // New bounds keep the limit, brought within them.
    expect((await queues.queueSetAdaptive(q, 4, 100, 800, ACTOR)).max_running).toBe(4);
    const off = await queues.queueSetAdaptive(q, null, null, null, "operator:admin");
    expect(off).toMatchObject({ max_running: 11, adaptive: null });
    const rows = await audits();
    expect(rows.map((r) => r.actor)).toEqual(["operator:admin", ACTOR, "operator:admin"]);
    expect(rows[2]?.detail).toMatchObject({
      before: { max_running: 7, adaptive: null },
      after: { max_running: 2, adaptive: { min: 2, max: 200, target_latency_ms: 500 } },
    });
    expect(rows[0]?.detail).toMatchObject({
      before: { max_running: 4 },
      after: { max_running: 11, adaptive: null },
    });
    expect((await changes(q)).map((c) => [c.limit_before, c.limit_after, c.reason])).toEqual([
      [4, 11, "turned off by operator:admin"],
      [2, 4, "bounds set to 4..100 by operator:test"],
      [7, 2, "turned on by operator:admin: starts at min 2"],
    ]);
    // Off again: nothing to do, still audited as a verb call.
    expect(await queues.queueSetAdaptive(q, null, null, null, ACTOR)).toMatchObject({ max_running: 11 });
  });

  it("keeps the newest 1,000 changes per queue", async () => {
    const q = "bounded";
    await setUp(q, 1, 2, 500, 0);
    await db.query(
      {
        name: "",
        text: `select taskq.adaptive_note($1, 1, 2, 'x', '{}', now()) from generate_series(1, 1005)`,
      },
      [q],
    );
    const [r] = await db.query<{ n: number }>(
      { name: "", text: "select count(*)::int as n from taskq.adaptive_changes where queue = $1" },
      [q],
    );
    expect(r?.n).toBe(1000);
  });
});
