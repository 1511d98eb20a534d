import { describe, expect, it } from "vitest";
import { ACTOR, gateTests } from "../testing/gate-harness.js";
import { knownQueues } from "../testing/services.js";

describe("gate 6, ramp of the claim rate (one gateway, injected clock)", () => {
  const t = gateTests();

  it("ramps the claim rate after a resume: a tenth of the full rate in the first fifth", async () => {
    await t.h.enqueue("rr", 500);
    await t.h.verb((q) =>
      q.queueEnsure("rr", { claim_rate_per_minute: 6000, claim_burst: 1, ramp_seconds: 10 }, ACTOR),
    );
    await t.h.verb((q) => q.queuePause("rr", ACTOR));
    await t.h.verb((q) => q.queueResume("rr", ACTOR));
    let claimed = 0;
    let ramping = 0;
    for (let ms = 0; ms < 2000; ms += 10) {
      const r = await t.h.poll("rr", 10);
      claimed += r.jobs.length;
      if (r.verdicts[0]?.reason === "RAMPING") ramping++;
      t.h.advance(10);
    }
    expect(claimed).toBeLessThanOrEqual(0.25 * 200);
    expect(claimed).toBeGreaterThanOrEqual(15);
    expect(ramping).toBeGreaterThan(0);
    t.h.advance(8000);
    let full = 0;
    for (let ms = 0; ms < 1000; ms += 10) {
      full += (await t.h.poll("rr", 10)).jobs.length;
      t.h.advance(10);
    }
    expect(full).toBeGreaterThanOrEqual(99); // 100/s
  });

  it("gives back the ramp's tokens a claim did not use: polls of an empty queue leave its ramp whole", async () => {
    await knownQueues(t.h.db, "rg");
    await t.h.verb((q) =>
      q.queueEnsure("rg", { claim_rate_per_minute: 6000, claim_burst: 10, ramp_seconds: 10 }, ACTOR),
    );
    await t.h.verb((q) => q.queuePause("rg", ACTOR));
    await t.h.verb((q) => q.queueResume("rg", ACTOR));
    // Near the ramp's start it admits one claim at a time: each empty poll's take is given back.
    for (let i = 0; i < 3; i++) expect(await t.h.poll("rg", 10)).toEqual({ jobs: [], verdicts: [] });
    await t.h.enqueue("rg", 5);
    expect((await t.h.poll("rg", 10)).jobs).toHaveLength(1);
    expect((await t.h.poll("rg", 10)).verdicts[0]?.reason).toBe("RAMPING");
  });
});
