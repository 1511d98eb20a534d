import { beforeEach, describe, expect, it } from "vitest";
import { ACTOR, type GateHarness, gateHarness, sharedGateDb } from "../testing/gate-harness.js";
import { knownQueues } from "../testing/services.js";

describe("gate 6, ramp of the claim rate (one gateway, injected clock)", () => {
  const shared = sharedGateDb();
  let h: GateHarness;
  beforeEach(() => {
    h = gateHarness(shared.db);
  });

  it("ramps the claim rate after a resume: a tenth of the full rate in the first fifth", async () => {
    await h.enqueue("rr", 500);
    await h.verb((q) =>
      q.queueEnsure("rr", { claim_rate_per_minute: 6000, claim_burst: 1, ramp_seconds: 10 }, ACTOR),
    );
    await h.verb((q) => q.queuePause("rr", ACTOR));
    await h.verb((q) => q.queueResume("rr", ACTOR));
    let claimed = 0;
    let ramping = 0;
    for (let t = 0; t < 2000; t += 10) {
      const r = await h.poll("rr", 10);
      claimed += r.jobs.length;
      if (r.verdicts[0]?.reason === "RAMPING") ramping++;
      h.advance(10);
    }
    expect(claimed).toBeLessThanOrEqual(0.25 * 200);
    expect(claimed).toBeGreaterThanOrEqual(15);
    expect(ramping).toBeGreaterThan(0);
    h.advance(8000);
    let full = 0;
    for (let t = 0; t < 1000; t += 10) {
      full += (await h.poll("rr", 10)).jobs.length;
      h.advance(10);
    }
    expect(full).toBeGreaterThanOrEqual(99); // 100/s
  });

  it("gives back the ramp's tokens a claim did not use: polls of an empty queue leave its ramp whole", async () => {
    await knownQueues(h.db, "rg");
    await h.verb((q) =>
      q.queueEnsure("rg", { claim_rate_per_minute: 6000, claim_burst: 10, ramp_seconds: 10 }, ACTOR),
    );
    await h.verb((q) => q.queuePause("rg", ACTOR));
    await h.verb((q) => q.queueResume("rg", ACTOR));
    // Near the ramp's start it admits one claim at a time: each empty poll's take is given back.
    for (let i = 0; i < 3; i++) expect(await h.poll("rg", 10)).toEqual({ jobs: [], verdicts: [] });
    await h.enqueue("rg", 5);
    expect((await h.poll("rg", 10)).jobs).toHaveLength(1);
    expect((await h.poll("rg", 10)).verdicts[0]?.reason).toBe("RAMPING");
  });
});
