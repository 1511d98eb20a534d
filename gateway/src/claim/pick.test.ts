import { describe, expect, it } from "vitest";
import { ACTOR, gateTests } from "../testing/gate-harness.js";

describe("the pick: priority aging and TTL (one gateway, PGlite)", () => {
  const t = gateTests();

  it("ages priority: a job that waited long enough overtakes fresher higher-priority work", async () => {
    const past = new Date(Date.now() - 10 * 60_000);
    const [old] = await t.h.enqueue("age", 1, { priority: 0 }, past);
    await t.h.enqueue("age", 2, { priority: 5 });
    const strict = await t.h.poll("age", 1);
    expect(strict.jobs[0]?.priority).toBe(5);
    await t.h.store.jobsUnclaim(strict.jobs.map((j) => ({ jobId: j.id, attempt: j.attempt })));
    await t.h.verb((q) => q.queueSetAging("age", 60, ACTOR)); // +1 per minute: the old job is at 10
    const aged = await t.h.poll("age", 1);
    expect(aged.jobs[0]?.id).toBe(old?.id);
  });

  it("ages across priority levels: the best aged job may come from a middle level", async () => {
    const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);
    await t.h.enqueue("age3", 3, { priority: 9 }); // fresh: 9
    const [middle] = await t.h.enqueue("age3", 1, { priority: 5 }, minutesAgo(5)); // 5 + 5 = 10
    await t.h.enqueue("age3", 1, { priority: 0 }, minutesAgo(6)); // 0 + 6 = 6
    await t.h.enqueue("age3", 2, { priority: 5 }, minutesAgo(1)); // 5 + 1 = 6
    await t.h.verb((q) => q.queueSetAging("age3", 60, ACTOR));
    // Neither the highest priority (9) nor the oldest job (6) is best: the middle level's oldest (10) is.
    const best = await t.h.poll("age3", 1);
    expect(best.jobs.map((j) => j.id)).toEqual([middle?.id]);
    const next = await t.h.poll("age3", 3);
    expect(next.jobs.map((j) => j.priority)).toEqual([9, 9, 9]);
  });

  it("keeps equal waiters in order under aging", async () => {
    const at = new Date(Date.now() - 120_000);
    const ids = (await t.h.enqueue("eq", 3, {}, at)).map((j) => j.id);
    await t.h.verb((q) => q.queueSetAging("eq", 60, ACTOR));
    expect((await t.h.poll("eq", 3)).jobs.map((j) => j.id)).toEqual(ids);
  });

  it("gives jobs the queue's default TTL, never hands out an expired one, and expires it", async () => {
    await t.h.verb((q) => q.queueEnsure("ttl", { default_ttl_seconds: 60 }, ACTOR));
    const t0 = new Date(Date.now() - 61_000);
    const [stale] = await t.h.enqueue("ttl", 1, {}, t0);
    const [own] = await t.h.enqueue("ttl", 1, { ttlSeconds: 3600 }, t0);
    const r = await t.h.poll("ttl");
    expect(r.jobs.map((j) => j.id)).toEqual([own?.id]);
    expect(await t.h.store.jobsExpireTtl(100)).toBe(1);
    expect(await t.h.store.jobGet(stale?.id ?? "")).toMatchObject({
      state: "cancelled",
      outcome: "expired_ttl",
    });
  });

  it("never TTL-expires a running job", async () => {
    const [j] = await t.h.enqueue("ttl2", 1, { ttlSeconds: 1 });
    expect((await t.h.poll("ttl2")).jobs).toHaveLength(1);
    expect(await t.h.store.jobsExpireTtl(100, new Date(Date.now() + 60_000))).toBe(0);
    expect((await t.h.store.jobGet(j?.id ?? ""))?.state).toBe("running");
  });
});
