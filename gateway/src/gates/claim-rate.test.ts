import { describe, expect, it } from "vitest";
import { LimiterUnavailableError } from "../limiter/fail-closed.js";
import { ACTOR, gateHarness, gateTests, neverHandedOut, withRateTake } from "../testing/gate-harness.js";

describe("gate 5, claim rate (one gateway, injected clock)", () => {
  const t = gateTests();

  it("meters the claim rate with a burst (GCRA) and refunds tokens a claim did not use", async () => {
    await t.h.enqueue("r", 3);
    await t.h.verb((q) => q.queueEnsure("r", { claim_rate_per_minute: 600, claim_burst: 5 }, ACTOR));
    expect((await t.h.poll("r", 10)).jobs).toHaveLength(3); // 5 admitted, 3 used, 2 refunded
    await t.h.enqueue("r", 5);
    expect((await t.h.poll("r", 10)).jobs).toHaveLength(2);
    expect(await t.h.poll("r", 10)).toMatchObject({
      jobs: [],
      verdicts: [{ reason: "RATE_LIMIT", retryAfterMs: 100 }],
    });
    t.h.advance(100);
    expect((await t.h.poll("r", 10)).jobs).toHaveLength(1);
  });

  it("takes claim-rate tokens beside the claim while the rate has room, handing out only those admitted", async () => {
    // A take waits until a claim statement has begun: it is then beside the claim, not before it.
    let beside = false;
    t.h = gateHarness(t.db, undefined, (l) =>
      withRateTake(l, async (...a) => {
        const begun = t.h.store.claimsBegun;
        for (let i = 0; beside && t.h.store.claimsBegun === begun; i++) {
          if (i > 200) throw new Error("the take waited for nothing: it ran before the claim");
          await new Promise((r) => setTimeout(r, 5));
        }
        return l.rateTake(...a);
      }),
    );
    await t.h.enqueue("rb", 10, { priority: 1 });
    await t.h.enqueue("rb", 1, { priority: 9 });
    await t.h.verb((q) => q.queueEnsure("rb", { claim_rate_per_minute: 600, claim_burst: 6 }, ACTOR));
    expect((await t.h.poll("rb", 4)).jobs).toHaveLength(4); // took first: all 4 admitted, so the rate has room
    beside = true;
    await t.h.enqueue("rb", 1, { priority: 5 });
    // Claimed 4 beside a take that admitted the 2 tokens left: the best 2 are handed out, 2 go back.
    const second = await t.h.poll("rb", 4);
    expect(second.jobs.map((j) => j.priority)).toEqual([5, 1]);
    expect(await neverHandedOut(t.h.db, "rb")).toBe(6);
    // That take did not admit all: the next takes first, claiming nothing the rate refuses.
    beside = false;
    const begun = t.h.store.claimsBegun;
    expect(await t.h.poll("rb", 4)).toMatchObject({
      jobs: [],
      verdicts: [{ reason: "RATE_LIMIT", retryAfterMs: 100 }],
    });
    expect(t.h.store.claimsBegun).toBe(begun);
    t.h.advance(100);
    expect((await t.h.poll("rb", 4)).jobs).toHaveLength(1);
  });

  it("claims beside a take only while tokens are left over: at a rate that binds it takes first", async () => {
    await t.h.enqueue("rt", 10);
    await t.h.verb((q) => q.queueEnsure("rt", { claim_rate_per_minute: 600, claim_burst: 2 }, ACTOR));
    expect((await t.h.poll("rt", 1)).jobs).toHaveLength(1); // took first; one token left
    expect((await t.h.poll("rt", 1)).jobs).toHaveLength(1); // beside its take, which emptied the bucket
    for (let i = 0; i < 3; i++) {
      t.h.advance(100); // one token a tick, each taken before a claim: nothing claimed to be put back
      const begun = t.h.store.claimsBegun;
      expect((await t.h.poll("rt", 1)).jobs).toHaveLength(1);
      expect(await t.h.poll("rt", 1)).toMatchObject({ jobs: [], verdicts: [{ reason: "RATE_LIMIT" }] });
      expect(t.h.store.claimsBegun).toBe(begun + 1);
    }
  });

  it("puts back what it claimed beside a take that fails (limiter unreachable) and declines RATE_LIMIT", async () => {
    let down = false;
    t.h = gateHarness(t.db, undefined, (l) =>
      withRateTake(l, async (...a) => {
        if (down) throw new LimiterUnavailableError("redis down");
        return l.rateTake(...a);
      }),
    );
    await t.h.enqueue("rd", 5);
    await t.h.verb((q) => q.queueEnsure("rd", { claim_rate_per_minute: 6000, claim_burst: 100 }, ACTOR));
    expect((await t.h.poll("rd", 2)).jobs).toHaveLength(2);
    down = true;
    const begun = t.h.store.claimsBegun;
    expect(await t.h.poll("rd", 2)).toEqual({
      jobs: [],
      verdicts: [{ queue: "rd", reason: "RATE_LIMIT", retryAfterMs: 1000 }],
    });
    expect(t.h.store.claimsBegun).toBe(begun + 1); // claimed beside the take, then put back
    expect(await neverHandedOut(t.h.db, "rd")).toBe(3);
    down = false;
    expect((await t.h.poll("rd", 5)).jobs).toHaveLength(3);
  });
});
