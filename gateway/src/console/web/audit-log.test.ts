import { describe, expect, it } from "vitest";
import { changes } from "./audit-log.js";

describe("changes", () => {
  it("lists only the settings an action changed, as before → after", () => {
    expect(
      changes({
        before: { paused: false, max_running: null, throttle: null },
        after: { paused: true, max_running: null, throttle: { limit: 10, period_ms: 60000 } },
      }),
    ).toBe('paused: false → true; throttle: — → {"limit":10,"period_ms":60000}');
    expect(changes({ before: { waiting: 3 }, after: { waiting: 0 } })).toBe("waiting: 3 → 0");
    expect(changes(undefined)).toBe("");
  });
});
