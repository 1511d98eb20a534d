import { describe, expect, it } from "vitest";
import { ATTEMPT_COLUMNS, attemptCells, noAttempts, runTime } from "./attempts-model.js";

describe("the job page's attempts", () => {
  it("shows a failed attempt's worker, run time, outcome and error, one cell per column", () => {
    const cells = attemptCells({
      attempt: 2,
      workerId: "worker-7",
      claimedAt: "2030-01-01T00:00:00Z",
      finishedAt: "2030-01-01T00:00:01.500Z",
      outcome: "lease_expired",
      error: {
        type: "LeaseExpired",
        message: "lease of attempt 2 expired without a settle",
        retryable: true,
      },
      duration: "1.500s",
    });
    expect(cells).toHaveLength(ATTEMPT_COLUMNS.length);
    expect([cells[0], cells[1], cells[4], cells[5], cells[6]]).toEqual([
      "2",
      "worker-7",
      "1.5 s",
      "lease expired",
      "LeaseExpired: lease of attempt 2 expired without a settle (retryable)",
    ]);
    expect(cells[2]).not.toBe("—");
    expect(cells[3]).not.toBe("—");
  });

  it("shows a running attempt as running, with no duration or error", () => {
    const cells = attemptCells({
      attempt: 1,
      workerId: "w",
      claimedAt: "2030-01-01T00:00:00Z",
      outcome: "running",
    });
    expect([cells[3], cells[4], cells[5], cells[6]]).toEqual(["running", "—", "running", ""]);
  });

  it("says plainly why there is none", () => {
    expect(noAttempts({ id: "1", attempt: 0 })).toBe("No attempts yet: no worker has claimed this job.");
    expect(noAttempts({ id: "1", attempt: 3 })).toBe("No attempts recorded for this job.");
  });

  it("writes run times in the unit that reads best", () => {
    expect([runTime(0), runTime(250), runTime(1500), runTime(59_940), runTime(600_000)]).toEqual([
      "0 ms",
      "250 ms",
      "1.5 s",
      "59.9 s",
      "10 min",
    ]);
  });
});
