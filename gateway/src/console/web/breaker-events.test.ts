import { describe, expect, it } from "vitest";
import { why } from "./breaker-events.js";

describe("why", () => {
  it("names the trigger, then its figures", () => {
    expect(why({ trigger: "streak", failure_streak: 5, failure_threshold: 5 })).toBe(
      "streak: failure_streak 5, failure_threshold 5",
    );
    expect(why({ trigger: "probe_failed" })).toBe("probe_failed");
    expect(why({ probe_attempt: 2 })).toBe("probe_attempt 2");
    expect(why({})).toBe("");
  });
});
