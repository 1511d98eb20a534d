import { describe, expect, it } from "vitest";
import { counted } from "./format.js";

describe("counted", () => {
  it("says one thing in the singular, any other count in the plural", () => {
    expect(counted(1, "time")).toBe("1 time");
    expect(counted(0, "time")).toBe("0 times");
    expect(counted(1234, "time")).toBe("1,234 times");
    expect(counted(1, "probe success", "probe successes")).toBe("1 probe success");
    expect(counted(2, "probe success", "probe successes")).toBe("2 probe successes");
  });
});
