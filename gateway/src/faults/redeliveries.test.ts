import { describe, expect, it } from "vitest";
import type { WorkerEvent } from "./oracle.js";
import { redeliveryCauses } from "./redeliveries.js";

const ev = (kind: WorkerEvent["kind"], job: string, attempt: number, worker: string): WorkerEvent => ({
  kind,
  job,
  attempt,
  worker,
  atMs: 0,
  leaseDeadlineMs: 2000,
});

describe("redeliveryCauses", () => {
  it("tells each cause of an earlier attempt apart, and ignores the stored attempt", () => {
    const events = [
      ev("claimed", "1", 1, "dead.0"),
      ev("claimed", "2", 1, "dead.1"),
      ev("completed", "2", 1, "dead.1"),
      ev("claimed", "3", 1, "alive.0"),
      ev("claimed", "4", 1, "alive.1"),
      ev("completed", "4", 1, "alive.1"),
      ev("claimed", "5", 2, "alive.0"),
    ];
    const stored = ["1", "2", "3", "4", "5"].map((job) => ({
      job,
      state: "succeeded",
      attempt: 2,
      resultAttempt: 2,
    }));
    expect(redeliveryCauses(events, stored, (w) => w.startsWith("dead."))).toEqual({
      heldByVictim: 1,
      completedByVictim: 1,
      liveHeld: 1,
      liveCompleted: 1,
      neverReceived: 1,
    });
  });
});
