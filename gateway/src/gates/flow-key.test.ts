import { describe, expect, it } from "vitest";
import { ACTOR, gateHarness, gateTests } from "../testing/gate-harness.js";
import { knownQueues } from "../testing/services.js";

describe("gate 7, flow keys (one gateway, injected clock)", () => {
  const t = gateTests();

  it("meters flow keys without head-of-line blocking, and says FLOW_KEY when only they wait", async () => {
    await t.h.verb((q) => q.flowLimitSet("acme", 60, 1, ACTOR));
    await t.h.enqueue("fk", 5, { flowKey: "acme", priority: 9 }); // ahead of the others
    await t.h.enqueue("fk", 3, { flowKey: "other" });
    await t.h.enqueue("fk", 2);
    const first = await t.h.poll("fk", 10);
    expect(first.jobs.filter((j) => j.flowKey === "acme")).toHaveLength(1);
    expect(first.jobs).toHaveLength(6);
    // The four acme jobs put back were never handed out: their attempt is restored.
    const waiting = await t.h.db.query<{ attempt: number }>({
      name: "",
      text: "select attempt from taskq.jobs where flow_key = 'acme' and state = 'queued'",
    });
    expect(waiting.map((r) => r.attempt)).toEqual([0, 0, 0, 0]);
    expect(await t.h.poll("fk", 10)).toMatchObject({
      jobs: [],
      verdicts: [{ queue: "fk", reason: "FLOW_KEY", retryAfterMs: 1000 }],
    });
    t.h.advance(1000);
    expect((await t.h.poll("fk", 10)).jobs).toHaveLength(1);
  });

  it.each([
    ["an ungated queue", "hol1", null],
    ["a gated queue", "hol2", 1000],
  ])(
    "never lets a limited key's backlog hold back other keys in %s, even when it fills a whole claim",
    async (_, queue, cap) => {
      await t.h.verb((q) => q.flowLimitSet(`${queue}-key`, 60, 1, ACTOR));
      await knownQueues(t.h.db, queue);
      if (cap) await t.h.verb((q) => q.queueSetConcurrency(queue, cap, ACTOR));
      await t.h.enqueue(queue, 20, { flowKey: `${queue}-key`, priority: 9 }); // far more than one claim takes
      await t.h.enqueue(queue, 3, { flowKey: "free" });
      const first = await t.h.poll(queue, 1);
      expect(first.jobs.map((j) => j.flowKey)).toEqual([`${queue}-key`]);
      // A second gateway has not yet learned that the key is out of tokens: its first claim takes only
      // that key's jobs, all sent back; it must still hand out the other keys' jobs in this poll.
      const other = gateHarness(t.db, t.h);
      const second = await other.poll(queue, 3);
      expect(second.jobs.map((j) => j.flowKey)).toEqual(["free", "free", "free"]);
    },
  );

  it("leaves unknown flow keys unlimited", async () => {
    await t.h.verb((q) => q.flowLimitSet("acme2", 60, 1, ACTOR));
    await t.h.enqueue("u", 5, { flowKey: "nobody-limits-me" });
    expect((await t.h.poll("u", 10)).jobs).toHaveLength(5);
  });
});
