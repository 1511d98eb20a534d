import { describe, expect, it } from "vitest";
import { timeTicks, valueTicks } from "./axis.js";

/** ms since the epoch of a UTC clock time on 1 Dec 2026. */
const at = (h: number, m: number, s = 0) => Date.UTC(2026, 11, 1, h, m, s);

describe("timeTicks", () => {
  it("marks the last 15 minutes every 5 minutes, on round UTC clock times, as HH:MM", () => {
    const ticks = timeTicks(at(18, 2), at(18, 17, 30));
    expect(ticks.map((t) => t.label)).toEqual(["18:05", "18:10", "18:15"]);
    expect(ticks[0]?.at).toBe(at(18, 5));
  });

  it("marks the last 5 minutes every minute", () => {
    expect(timeTicks(at(9, 0, 20), at(9, 5, 20)).map((t) => t.label)).toEqual([
      "09:01",
      "09:02",
      "09:03",
      "09:04",
      "09:05",
    ]);
  });

  it("shows seconds when the step is under a minute, and fits any window in the number asked", () => {
    expect(timeTicks(at(23, 59, 5), at(0, 0, 0) + 86_400_000).map((t) => t.label)).toEqual([
      "23:59:15",
      "23:59:30",
      "23:59:45",
      "00:00:00",
    ]);
    for (const span of [1, 999, 60_000, 3_600_000, 86_400_000])
      expect(timeTicks(at(12, 0), at(12, 0) + span).length).toBeLessThanOrEqual(5);
  });
});

describe("valueTicks", () => {
  it("runs from 0 to a round top at or above the largest value, in at most four steps", () => {
    const labels = (max: number) => valueTicks(max).map((t) => t.label);
    expect(labels(1)).toEqual(["0", "0.5", "1"]);
    expect(labels(4)).toEqual(["0", "1", "2", "3", "4"]);
    expect(labels(7)).toEqual(["0", "2", "4", "6", "8"]);
    expect(labels(10)).toEqual(["0", "5", "10"]);
    expect(labels(1234)).toEqual(["0", "500", "1K", "1.5K"]);
    expect(labels(60_000)).toEqual(["0", "20K", "40K", "60K"]);
    expect(labels(0.3)).toEqual(["0", "0.1", "0.2", "0.3"]);
  });
});
