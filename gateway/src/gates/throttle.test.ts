import { beforeEach, describe, expect, it } from "vitest";
import { ACTOR, type GateHarness, gateHarness, sharedGateDb } from "../testing/gate-harness.js";
import { knownQueues } from "../testing/services.js";

describe("gate 4, throttle (one gateway, injected clock)", () => {
  const shared = sharedGateDb();
  let h: GateHarness;
  beforeEach(() => {
    h = gateHarness(shared.db);
  });

  it("throttles to one claim per period/limit, one job per poll, with the exact retry_after", async () => {
    await h.enqueue("t", 5);
    await h.verb((q) => q.queueSetThrottle("t", 10, 1000, ACTOR)); // one claim per 100 ms
    expect((await h.poll("t")).jobs).toHaveLength(1);
    h.advance(30);
    expect(await h.poll("t")).toMatchObject({
      jobs: [],
      verdicts: [{ reason: "THROTTLE", retryAfterMs: 70 }],
    });
    h.advance(70); // a worker that sleeps exactly retry_after is admitted
    expect((await h.poll("t")).jobs).toHaveLength(1);
  });

  it("spends no throttle slot on an empty queue", async () => {
    await knownQueues(h.db, "e");
    await h.verb((q) => q.queueSetThrottle("e", 1, 60_000, ACTOR));
    expect(await h.poll("e")).toEqual({ jobs: [], verdicts: [] });
    await h.enqueue("e", 1);
    expect((await h.poll("e")).jobs).toHaveLength(1);
  });

  it("applies a throttle change on the next claim, dropping the slot the old rate held", async () => {
    await h.enqueue("c", 3);
    await h.verb((q) => q.queueSetThrottle("c", 1, 60_000, ACTOR));
    expect((await h.poll("c")).jobs).toHaveLength(1);
    expect((await h.poll("c")).verdicts[0]?.retryAfterMs).toBe(60_000);
    await h.verb((q) => q.queueSetThrottle("c", 10, 1000, ACTOR));
    expect((await h.poll("c")).jobs).toHaveLength(1);
    await h.verb((q) => q.queueDeleteThrottle("c", ACTOR));
    expect((await h.poll("c")).jobs).toHaveLength(1);
  });
});
