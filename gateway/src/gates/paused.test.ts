import { describe, expect, it } from "vitest";
import { ACTOR, gateTests } from "../testing/gate-harness.js";

describe("gate 1, pause (one gateway, PGlite)", () => {
  const t = gateTests();

  it("pause answers PAUSED and hands out nothing; resume hands out again", async () => {
    await t.h.enqueue("p", 2);
    await t.h.verb((q) => q.queuePause("p", ACTOR));
    expect(await t.h.poll("p")).toEqual({
      jobs: [],
      verdicts: [{ queue: "p", reason: "PAUSED", retryAfterMs: 1000 }],
    });
    await t.h.verb((q) => q.queueResume("p", ACTOR));
    expect((await t.h.poll("p")).jobs).toHaveLength(2);
  });
});
