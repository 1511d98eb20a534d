import { Level } from "@taskq/sdk/conformance";
import { describe, expect, it } from "vitest";
import { KnownFailing } from "./known-failing.js";
import { buildReport, junitXml, reportJson, summaryLine } from "./report.js";

const base = { level: Level.REQUIRED, durationMs: 1500, stderr: "boom <here>", trace: [{ type: "ready" }] };
const report = buildReport(
  "worker",
  "python3 adapter.py",
  [
    { ...base, name: "a/ok", passed: true, failures: [] },
    { ...base, name: "b/bad", passed: false, failures: ['lease 1/1 "late" & lost'] },
    { ...base, name: "c/known", passed: false, failures: ["x"] },
    { ...base, name: "d/optional", passed: true, failures: [], notApplicable: "no prefetch" },
  ],
  new KnownFailing(["c/known"]),
  3210,
  ["a/ok", "b/bad", "c/known", "d/optional"],
);

describe("reports", () => {
  it("sums the run up in one line", () => {
    expect(summaryLine(report)).toBe(
      "taskq-conformance worker: FAIL: 1 passed, 1 failed, 1 known failing, 1 not applicable (of 4) in 3.2 s",
    );
  });

  it("writes JUnit XML with failures, known failures as skipped, and escaped text", () => {
    const xml = junitXml(report);
    expect(xml).toContain('tests="4" failures="1" skipped="2"');
    expect(xml).toContain(
      '<testcase classname="taskq-conformance.worker" name="a/ok" time="1.500"></testcase>',
    );
    expect(xml).toContain('<failure message="lease 1/1 &quot;late&quot; &amp; lost">');
    expect(xml).toContain("<system-err>boom &lt;here&gt;</system-err>");
    expect(xml).toContain('<skipped message="known failing"/>');
    expect(xml).toContain('<skipped message="not applicable: no prefetch"/>');
  });

  it("writes JSON with outcomes, level names and traces", () => {
    const json = JSON.parse(reportJson(report));
    expect(json.passed).toBe(false);
    expect(json.results[1]).toMatchObject({ name: "b/bad", outcome: "failed", level: "required" });
    expect(json.results[0].trace).toEqual([{ type: "ready" }]);
    expect(json.results[3]).toMatchObject({ outcome: "not-applicable", notApplicable: "no prefetch" });
  });
});
