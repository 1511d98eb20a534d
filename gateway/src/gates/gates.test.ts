import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { QueueStore } from "../store/queue-store.js";
import { ACTOR, type GateHarness, gateHarness, gateTests, openGateDb } from "../testing/gate-harness.js";
import { knownQueues } from "../testing/services.js";

describe("the gates together (one gateway, PGlite)", () => {
  const t = gateTests();

  it("never gates a queue that sets nothing", async () => {
    await t.h.enqueue("plain", 3);
    const r = await t.h.poll("plain");
    expect(r.jobs).toHaveLength(3);
    expect(r.verdicts).toEqual([]);
  });

  it("orders verdicts: PAUSED over MAX_RUNNING over THROTTLE", async () => {
    await t.h.enqueue("o", 5);
    await t.h.verb((q) => q.queueSetConcurrency("o", 1, ACTOR));
    await t.h.verb((q) => q.queueSetThrottle("o", 1, 60_000, ACTOR));
    expect((await t.h.poll("o")).jobs).toHaveLength(1); // takes the slot and fills the cap
    expect((await t.h.poll("o")).verdicts[0]?.reason).toBe("MAX_RUNNING");
    await t.h.verb((q) => q.queuePause("o", ACTOR));
    expect((await t.h.poll("o")).verdicts[0]?.reason).toBe("PAUSED");
    await t.h.verb((q) => q.queueResume("o", ACTOR));
    await t.h.verb((q) => q.queueSetConcurrency("o", null, ACTOR));
    expect((await t.h.poll("o")).verdicts[0]?.reason).toBe("THROTTLE");
  });
});

describe("operator verbs", () => {
  let h: GateHarness;
  // A database of its own per test: these tests check that nothing at all was written.
  beforeEach(async () => {
    h = gateHarness(await openGateDb());
  });
  afterEach(() => h.db.close());
  const auditCount = async () =>
    (
      await h.db.query<{ n: number }>({ name: "", text: "select count(*)::int as n from taskq.queue_audit" })
    )[0]?.n;

  it("refuses every out-of-range setting with a message naming the field, writing nothing", async () => {
    const bad: [(q: QueueStore) => Promise<unknown>, string][] = [
      [(q) => q.queueSetThrottle("x", 0, 1000, ACTOR), "limit"],
      [(q) => q.queueSetThrottle("x", 100_001, 1000, ACTOR), "limit"],
      [(q) => q.queueSetThrottle("x", 1, 999, ACTOR), "period_ms"],
      [(q) => q.queueSetThrottle("x", 1, 86_400_001, ACTOR), "period_ms"],
      [(q) => q.queueSetConcurrency("x", 0, ACTOR), "max_running"],
      [(q) => q.queueEnsure("x", { max_running: -1 }, ACTOR), "profile.max_running"],
      [(q) => q.queueEnsure("x", { claim_rate_per_minute: 0 }, ACTOR), "profile.claim_rate_per_minute"],
      [
        (q) => q.queueEnsure("x", { claim_rate_per_minute: 60, claim_burst: 0 }, ACTOR),
        "profile.claim_burst",
      ],
      [(q) => q.queueEnsure("x", { claim_burst: 5 }, ACTOR), "profile.claim_burst"],
      [(q) => q.queueEnsure("x", { ramp_seconds: 0 }, ACTOR), "profile.ramp_seconds"],
      [(q) => q.queueEnsure("x", { default_ttl_seconds: 0 }, ACTOR), "profile.default_ttl_seconds"],
      [(q) => q.queueEnsure("x", { notify_mode: "sometimes" }, ACTOR), "profile.notify_mode"],
      [(q) => q.queueEnsure("x", { max_running: 1.5 }, ACTOR), "profile.max_running"],
      [(q) => q.queueEnsure("x", { bogus: 1 }, ACTOR), "profile.bogus"],
      [(q) => q.queueEnsure("bad name", {}, ACTOR), "queue"],
      [(q) => q.queueSetAging("x", 0, ACTOR), "aging_seconds"],
      [(q) => q.flowLimitSet("k", 0, 1, ACTOR), "rate_per_minute"],
      [(q) => q.flowLimitSet("k", 60, 0, ACTOR), "burst"],
      [(q) => q.flowLimitSet("k".repeat(256), 60, 1, ACTOR), "flow_key"],
      [(q) => q.queuePause("x", ""), "actor"],
    ];
    for (const [run, field] of bad) {
      const err = await run(h.queues).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.name, field).toBe("InvalidArgumentError");
      expect(err?.message.startsWith(`${field} `), `${err?.message}`).toBe(true);
    }
    expect(await auditCount()).toBe(0);
    expect(await h.queues.queuesList()).toEqual([]);
    expect(await h.queues.flowLimitsList()).toEqual([]);
  });

  it("writes one audit row per verb with actor and {before, after}", async () => {
    await knownQueues(h.db, "a");
    await h.queues.queueSetThrottle("a", 5, 60_000, "operator:ada");
    await h.queues.queueDeleteThrottle("a", "operator:ada");
    await h.queues.queuePause("a", "operator:ada");
    const rows = await h.db.query<{
      event_type: string;
      actor: string;
      detail: { before: unknown; after: unknown };
    }>({
      name: "",
      text: "select event_type, actor, detail from taskq.queue_audit where queue = 'a' order by id",
    });
    expect(rows.map((r) => r.event_type)).toEqual(["queue.throttle", "queue.unthrottle", "queue.pause"]);
    expect(rows.every((r) => r.actor === "operator:ada")).toBe(true);
    expect(rows[0]?.detail).toMatchObject({
      before: { throttle: null },
      after: { throttle: { limit: 5, period_ms: 60_000, source: "console" } },
    });
  });

  it("refuses to change a config-sourced throttle through the API, and clears only waiting jobs", async () => {
    await knownQueues(h.db, "cfg");
    await h.queues.queueSetThrottle("cfg", 10, 60_000, "config", "config");
    const err = await h.queues.queueSetThrottle("cfg", 20, 60_000, ACTOR).catch((e: Error) => e);
    expect((err as Error).name).toBe("FailedPreconditionError");
    const del = await h.queues.queueDeleteThrottle("cfg", ACTOR).catch((e: Error) => e);
    expect((del as Error).name).toBe("FailedPreconditionError");
    await h.enqueue("cfg", 3);
    await h.enqueue("cfg", 1, { delayMs: 60_000 });
    await h.verb((q) => q.queueDeleteThrottle("cfg", "config", "config"));
    expect((await h.poll("cfg", 1)).jobs).toHaveLength(1);
    expect(await h.queues.queueClear("cfg", ACTOR)).toBe(3);
    const left = await h.db.query<{ state: string }>({
      name: "",
      text: "select state from taskq.jobs where queue = 'cfg'",
    });
    expect(left.map((r) => r.state)).toEqual(["running"]);
  });
});
