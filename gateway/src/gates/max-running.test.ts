import { describe, expect, it } from "vitest";
import { ACTOR, gateTests } from "../testing/gate-harness.js";

describe("gate 3, max_running (one gateway, PGlite)", () => {
  const t = gateTests();

  it("caps running jobs exactly and frees a slot on settle", async () => {
    await t.h.enqueue("cap", 10);
    await t.h.verb((q) => q.queueSetConcurrency("cap", 3, ACTOR));
    const first = await t.h.poll("cap");
    expect(first.jobs).toHaveLength(3);
    expect(await t.h.poll("cap")).toMatchObject({
      jobs: [],
      verdicts: [{ reason: "MAX_RUNNING", retryAfterMs: 50 }],
    });
    const done = first.jobs[0];
    if (!done) throw new Error("no job");
    await t.h.store.jobsSettle([
      { jobId: done.id, attempt: done.attempt, kind: "success", result: new Uint8Array() },
    ]);
    expect((await t.h.poll("cap")).jobs).toHaveLength(1);
  });

  it("ramps max_running after a resume: RAMPING until the window has passed", async () => {
    await t.h.enqueue("ramp", 20);
    await t.h.verb((q) => q.queueEnsure("ramp", { max_running: 10, ramp_seconds: 10 }, ACTOR));
    await t.h.verb((q) => q.queuePause("ramp", ACTOR));
    await t.h.verb((q) => q.queueResume("ramp", ACTOR));
    expect((await t.h.poll("ramp", 20)).jobs).toHaveLength(1); // near zero: one
    expect((await t.h.poll("ramp", 20)).verdicts[0]?.reason).toBe("RAMPING");
    // The cap is scaled under the row lock, on the database's clock: the window is moved back instead.
    const rampedFor = (s: number) =>
      t.h.db.query(
        {
          name: "",
          text: `update taskq.queues set ramp_started_at = now() - $1 * interval '1 second' where name = 'ramp'`,
        },
        [s],
      );
    await rampedFor(4.5);
    expect((await t.h.poll("ramp", 20)).jobs).toHaveLength(4); // about half way: cap 5
    await rampedFor(10);
    expect((await t.h.poll("ramp", 20)).jobs).toHaveLength(5); // full cap 10
    expect((await t.h.poll("ramp", 20)).verdicts[0]?.reason).toBe("MAX_RUNNING");
  });
});
