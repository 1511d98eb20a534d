import { Level } from "@taskq/sdk/conformance";
import { describe, expect, it } from "vitest";
import type { CaseResult } from "./case-result.js";
import { KnownFailing } from "./known-failing.js";
import { buildReport, reportPassed } from "./report.js";

const result = (name: string, passed: boolean): CaseResult => ({
  name,
  level: Level.REQUIRED,
  passed,
  failures: passed ? [] : ["x"],
  durationMs: 1,
  stderr: "",
  trace: [],
});

describe("KnownFailing", () => {
  const known = new KnownFailing(["# comment", "", "verdict/*  # globs", "settle/conflict-not-retried"]);

  it("counts a listed failure as known failing, and the run still passes", () => {
    const r = buildReport("worker", "x", [result("verdict/a", false), result("claim/b", true)], known, 1, [
      "verdict/a",
      "claim/b",
      "settle/conflict-not-retried",
    ]);
    expect(r.results.map((x) => x.outcome)).toEqual(["known-failing", "passed"]);
    expect(reportPassed(r)).toBe(true);
  });

  it("fails the run when a listed case passes", () => {
    const r = buildReport("worker", "x", [result("settle/conflict-not-retried", true)], known, 1, [
      "settle/conflict-not-retried",
      "verdict/a",
    ]);
    expect(r.results[0]?.outcome).toBe("unexpected-pass");
    expect(reportPassed(r)).toBe(false);
  });

  it("fails the run when a pattern matches no case", () => {
    const r = buildReport("worker", "x", [result("verdict/a", false)], known, 1, ["verdict/a"]);
    expect(r.unmatchedPatterns).toEqual(["settle/conflict-not-retried"]);
    expect(reportPassed(r)).toBe(false);
  });

  it("fails the run on an unlisted failure", () => {
    const r = buildReport("worker", "x", [result("claim/b", false)], new KnownFailing([]), 1, ["claim/b"]);
    expect(r.results[0]?.outcome).toBe("failed");
    expect(reportPassed(r)).toBe(false);
  });

  it("matches whole names only", () => {
    expect(known.lists("verdict/x")).toBe(true);
    expect(known.lists("xverdict/x")).toBe(false);
    expect(known.lists("settle/conflict-not-retried-too")).toBe(false);
  });
});
