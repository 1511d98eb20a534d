import { describe, expect, it } from "vitest";
import { dryRunView, wait } from "./dry-run-model.js";

describe("dryRunView", () => {
  it("says how many jobs the change delays and by how much, with both replays side by side", () => {
    const v = dryRunView({
      jobs: 1200,
      workers: 20,
      minDelayMs: 1000,
      delayed: 340,
      longestExtraWaitMs: 95_000,
      current: { meanWaitMs: 12, maxWaitMs: 400 },
      proposed: { peakBacklog: 1500, meanWaitMs: 20_500, maxWaitMs: 95_400, notStartedByEnd: 3 },
    });
    expect(v.summary).toBe("340 of 1,200 jobs would have started 1 s or more later, the longest by 95 s.");
    expect(v.rows).toEqual([
      ["Peak backlog", "0", "1,500"],
      ["Mean wait", "12 ms", "20.5 s"],
      ["Longest wait", "400 ms", "95.4 s"],
      ["Not started by the end", "0", "3"],
    ]);
    expect(v.notes).toEqual([
      "Workers assumed: at most 20 jobs at once, the most that ran at once in the window.",
    ]);
  });

  it("reads zero values left out of the JSON as zero, and names a cut-short window and jobs started sooner", () => {
    const v = dryRunView({ jobs: 5, minDelayMs: 1000, sooner: 2, truncated: true, maxJobs: 5 });
    expect(v.summary).toBe("Over the window's 5 jobs, none would have started 1 s or more later.");
    expect(v.notes).toEqual([
      "2 jobs would have started 1 s or more sooner.",
      "The window held more than 5 jobs: only the oldest 5 were replayed.",
      "Workers assumed: as many at once as the limits allow.",
    ]);
    expect(dryRunView({}).summary).toBe("No job of this queue ran in the window: nothing to replay.");
  });

  it("puts waits in the unit that reads best", () => {
    expect([wait(0), wait(999), wait(1500), wait(119_000), wait(150_000), wait(5_400_000)]).toEqual([
      "0 ms",
      "999 ms",
      "1.5 s",
      "119 s",
      "2.5 min",
      "1.5 h",
    ]);
  });
});
