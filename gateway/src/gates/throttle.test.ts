import { describe, expect, it } from "vitest";
import { ACTOR, gateTests } from "../testing/gate-harness.js";
import { knownQueues } from "../testing/services.js";

describe("gate 4, throttle (one gateway, injected clock)", () => {
  const t = gateTests();

  it("throttles to one claim per period/limit, one job per poll, with the exact retry_after", async () => {
    await t.h.enqueue("t", 5);
    await t.h.verb((q) => q.queueSetThrottle("t", 10, 1000, ACTOR)); // one claim per 100 ms
    expect((await t.h.poll("t")).jobs).toHaveLength(1);
    t.h.advance(30);
    expect(await t.h.poll("t")).toMatchObject({
      jobs: [],
      verdicts: [{ reason: "THROTTLE", retryAfterMs: 70 }],
    });
    t.h.advance(70); // a worker that sleeps exactly retry_after is admitted
    expect((await t.h.poll("t")).jobs).toHaveLength(1);
  });

  it("spends no throttle slot on an empty queue", async () => {
    await knownQueues(t.h.db, "e");
    await t.h.verb((q) => q.queueSetThrottle("e", 1, 60_000, ACTOR));
    expect(await t.h.poll("e")).toEqual({ jobs: [], verdicts: [] });
    await t.h.enqueue("e", 1);
    expect((await t.h.poll("e")).jobs).toHaveLength(1);
  });

  it("applies a throttle change on the next claim, dropping the slot the old rate held", async () => {
    await t.h.enqueue("c", 3);
    await t.h.verb((q) => q.queueSetThrottle("c", 1, 60_000, ACTOR));
    expect((await t.h.poll("c")).jobs).toHaveLength(1);
    expect((await t.h.poll("c")).verdicts[0]?.retryAfterMs).toBe(60_000);
    await t.h.verb((q) => q.queueSetThrottle("c", 10, 1000, ACTOR));
    expect((await t.h.poll("c")).jobs).toHaveLength(1);
    await t.h.verb((q) => q.queueDeleteThrottle("c", ACTOR));
    expect((await t.h.poll("c")).jobs).toHaveLength(1);
  });
});
