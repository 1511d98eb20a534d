import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clock, dateTime, timeOfDay } from "./time.js";

describe("console times", () => {
  const at = Date.parse("2026-03-07T04:05:06.789Z");
  // A zone half an hour off whole hours: a local time would show here as 09:35.
  const zone = process.env.TZ;
  beforeAll(() => {
    process.env.TZ = "Asia/Kolkata";
  });
  afterAll(() => {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  });

  it("shows an instant as 24-hour UTC, naming the zone, whatever the process' own zone", () => {
    expect(dateTime(at)).toBe("2026-03-07 04:05:06 UTC");
    // The same instant written with an offset, as RFC 3339 allows.
    expect(dateTime("2026-03-07T09:35:06.789+05:30")).toBe("2026-03-07 04:05:06 UTC");
    expect(dateTime("2026-12-31T23:59:59Z")).toBe("2026-12-31 23:59:59 UTC");
    expect(timeOfDay(at)).toBe("04:05:06 UTC");
    expect(clock(at, false)).toBe("04:05");
  });

  it("shows nothing for an unset or unreadable time", () => {
    expect(dateTime(undefined)).toBe("");
    expect(dateTime("")).toBe("");
    expect(dateTime("yesterday")).toBe("");
  });
});
