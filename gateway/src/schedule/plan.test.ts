import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors.js";
import { CronSchedule } from "./cron.js";
import { nextFiring, planFirings } from "./plan.js";

const t = (iso: string) => new Date(iso);
const opts = { graceMs: 60_000, maxFirings: 100 };

describe("CronSchedule", () => {
  it("reads 5 fields in UTC and 6 with seconds first; next is strictly after", () => {
    const hourly = new CronSchedule("0 * * * *", "UTC");
    expect(hourly.next(t("2026-01-01T00:30:00Z"))).toEqual(t("2026-01-01T01:00:00Z"));
    expect(hourly.next(t("2026-01-01T01:00:00Z"))).toEqual(t("2026-01-01T02:00:00Z"));
    expect(hourly.latestAtOrBefore(t("2026-01-01T01:00:00Z"))).toEqual(t("2026-01-01T01:00:00Z"));
    expect(hourly.latestAtOrBefore(t("2026-01-01T00:59:59.999Z"))).toEqual(t("2026-01-01T00:00:00Z"));
    const everyFive = new CronSchedule("*/5 * * * * *", "UTC");
    expect(everyFive.next(t("2026-01-01T00:00:07Z"))).toEqual(t("2026-01-01T00:00:10Z"));
  });

  it("reads the cron in a named time zone, across a DST change", () => {
    const nine = new CronSchedule("0 9 * * *", "Europe/Berlin");
    // CET (UTC+1) in winter, CEST (UTC+2) after 2026-03-29.
    expect(nine.next(t("2026-03-28T00:00:00Z"))).toEqual(t("2026-03-28T08:00:00Z"));
    expect(nine.next(t("2026-03-29T00:00:00Z"))).toEqual(t("2026-03-29T07:00:00Z"));
  });

  it("refuses bad input, naming the field", () => {
    const bad = (cron: string, tz = "UTC") => {
      try {
        new CronSchedule(cron, tz);
      } catch (err) {
        return err instanceof InvalidArgumentError ? err.field : "other error";
      }
      return "accepted";
    };
    expect(bad("* * *")).toBe("cron");
    expect(bad("0 0 * * * * *")).toBe("cron");
    expect(bad("61 * * * *")).toBe("cron");
    expect(bad("0 * * * *", "Mars/Base")).toBe("time_zone");
    expect(bad("0 * * * *", "America/New_York")).toBe("accepted");
  });
});

describe("planFirings", () => {
  const hourly = new CronSchedule("0 * * * *", "UTC");
  const everySecond = new CronSchedule("* * * * * *", "UTC");

  it("fires a due slot at slot + smear offset, and nothing before it is due", () => {
    const s = {
      cron: hourly,
      smearOffsetMs: 123_456,
      missedPolicy: "skip" as const,
      lastSlot: t("2026-01-01T00:30:00Z"),
    };
    expect(planFirings(s, t("2026-01-01T00:59:59Z"), opts)).toEqual({ fire: [], skipTo: null });
    expect(planFirings(s, t("2026-01-01T01:00:00Z"), opts).fire).toEqual([
      { slot: t("2026-01-01T01:00:00Z"), runAt: t("2026-01-01T01:02:03.456Z") },
    ]);
    expect(nextFiring(s, t("2026-01-01T00:30:00Z"))).toEqual({
      slot: t("2026-01-01T01:00:00Z"),
      runAt: t("2026-01-01T01:02:03.456Z"),
    });
  });

  it("fires every late slot within the grace window, oldest first", () => {
    const s = {
      cron: everySecond,
      smearOffsetMs: 0,
      missedPolicy: "skip" as const,
      lastSlot: t("2026-01-01T00:00:00Z"),
    };
    const plan = planFirings(s, t("2026-01-01T00:00:05.500Z"), opts);
    expect(plan.fire.map((f) => f.slot.toISOString().slice(17, 19))).toEqual(["01", "02", "03", "04", "05"]);
    expect(planFirings(s, t("2026-01-01T00:00:05.500Z"), { ...opts, maxFirings: 2 }).fire).toHaveLength(2);
  });

  it("missed slots (older than the grace): skip passes over them, fire_once fires the latest once", () => {
    const base = { cron: hourly, smearOffsetMs: 0, lastSlot: t("2026-01-01T00:00:00Z") };
    const now = t("2026-01-01T05:30:00Z");
    expect(planFirings({ ...base, missedPolicy: "skip" }, now, opts)).toEqual({
      fire: [],
      skipTo: t("2026-01-01T05:00:00Z"),
    });
    expect(planFirings({ ...base, missedPolicy: "fire_once" }, now, opts)).toEqual({
      fire: [{ slot: t("2026-01-01T05:00:00Z"), runAt: t("2026-01-01T05:00:00Z") }],
      skipTo: null,
    });
    // A slot only seconds late is not missed: it fires under either policy.
    const late = t("2026-01-01T05:00:30Z");
    expect(planFirings({ ...base, missedPolicy: "skip" }, late, opts).fire).toHaveLength(1);
  });
});
