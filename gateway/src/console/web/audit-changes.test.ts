import { describe, expect, it } from "vitest";
import { changeLine, changes } from "./audit-changes.js";

const lines = (detail: Parameters<typeof changes>[0]) => changes(detail).map(changeLine);

describe("changes", () => {
  it("lists only the settings an action changed, one line each, as before → after", () => {
    expect(
      lines({ before: { paused: false, max_running: null }, after: { paused: true, max_running: null } }),
    ).toEqual(["paused: false → true"]);
    expect(lines({ before: { waiting: 3 }, after: { waiting: 0 } })).toEqual(["waiting: 3 → 0"]);
    expect(lines(undefined)).toEqual([]);
  });

  it("compares nested settings field by field instead of printing them as JSON", () => {
    expect(
      lines({
        before: { paused: true, throttle: null },
        after: { paused: true, throttle: { limit: 10, period_ms: 60000, source: "console" } },
      }),
    ).toEqual(["throttle.limit: — → 10", "throttle.period_ms: — → 60000", "throttle.source: — → console"]);
    const breaker = { state: "closed", failure_streak: 0, opened_total: 2, tripped_at: null, rate: null };
    expect(
      lines({
        before: { breaker },
        after: {
          breaker: { ...breaker, state: "open", opened_total: 3, tripped_at: "2026-12-01T18:00:00Z" },
        },
      }),
    ).toEqual([
      "breaker.opened_total: 2 → 3",
      "breaker.state: closed → open",
      "breaker.tripped_at: — → 2026-12-01T18:00:00Z",
    ]);
  });

  it("shows an empty string and a list distinctly from none", () => {
    expect(lines({ before: { tag: "", keys: null }, after: { tag: "a", keys: ["x", "y"] } })).toEqual([
      'keys: — → ["x","y"]',
      'tag: "" → a',
    ]);
  });
});
