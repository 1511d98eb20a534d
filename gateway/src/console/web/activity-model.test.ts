import { describe, expect, it } from "vitest";
import { activitySeries } from "./activity-model.js";

describe("activitySeries", () => {
  it("claims per second over whole minutes and the elapsed part of the current one; gaps for no run time", () => {
    const t0 = Date.parse("2026-01-01T10:00:00Z");
    const s = activitySeries(
      [
        {
          minute: "2026-01-01T10:00:00Z",
          claimed: "120",
          succeeded: "100",
          failed: "2",
          avgRunMs: 40,
          maxRunMs: 90,
        },
        { minute: "2026-01-01T10:01:00Z", throttled: { THROTTLE: "3", PAUSED: "1" } },
        { minute: "2026-01-01T10:02:00Z", claimed: "30", throttled: { THROTTLE: "5" } },
      ],
      t0 + 2 * 60_000 + 15_000,
    );
    expect(s.claimsPerSecond).toEqual([
      [t0, 2],
      [t0 + 60_000, 0],
      [t0 + 120_000, 2],
    ]);
    expect(s.succeeded.map(([, v]) => v)).toEqual([100, 0, 0]);
    expect(s.failed.map(([, v]) => v)).toEqual([2, 0, 0]);
    expect(s.avgRunMs.map(([, v]) => v)).toEqual([40, null, null]);
    expect(s.maxRunMs.map(([, v]) => v)).toEqual([90, null, null]);
    expect(s.throttled.map(([reason, points]) => [reason, points.map(([, v]) => v)])).toEqual([
      ["THROTTLE", [0, 3, 5]],
      ["PAUSED", [0, 1, 0]],
    ]);
    // 10:02 is still filling at 10:02:15: the headline is 10:01.
    expect(s.lastFullMinute).toBe(t0 + 60_000);
  });

  it("has no full minute while the only one is still filling, and the last one once it ends", () => {
    const t0 = Date.parse("2026-01-01T10:00:00Z");
    const minutes = [{ minute: "2026-01-01T10:00:00Z", claimed: "6" }];
    expect(activitySeries(minutes, t0 + 59_999).lastFullMinute).toBeNull();
    expect(activitySeries(minutes, t0 + 60_000).lastFullMinute).toBe(t0);
  });
});
