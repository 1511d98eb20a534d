import { beforeEach, describe, expect, it } from "vitest";
import { ACTOR, type GateHarness, gateHarness, sharedGateDb } from "../testing/gate-harness.js";

describe("gate 1, pause (one gateway, PGlite)", () => {
  const shared = sharedGateDb();
  let h: GateHarness;
  beforeEach(() => {
    h = gateHarness(shared.db);
  });

  it("pause answers PAUSED and hands out nothing; resume hands out again", async () => {
    await h.enqueue("p", 2);
    await h.verb((q) => q.queuePause("p", ACTOR));
    expect(await h.poll("p")).toEqual({
      jobs: [],
      verdicts: [{ queue: "p", reason: "PAUSED", retryAfterMs: 1000 }],
    });
    await h.verb((q) => q.queueResume("p", ACTOR));
    expect((await h.poll("p")).jobs).toHaveLength(2);
  });
});
