import { Level } from "@taskq/sdk/conformance";
import type { CaseResult, Outcome } from "./case-result.js";
import type { KnownFailing } from "./known-failing.js";

/** A finished run: each case's result and how it counts. */
export interface RunReport {
  mode: "worker" | "gateway";
  /** Which program or gateway was tested. */
  subject: string;
  results: Array<CaseResult & { outcome: Outcome }>;
  /** Known-failing patterns that matched no case. */
  unmatchedPatterns: string[];
  durationMs: number;
}

export function buildReport(
  mode: RunReport["mode"],
  subject: string,
  results: CaseResult[],
  known: KnownFailing,
  durationMs: number,
  allNames: readonly string[],
): RunReport {
  return {
    mode,
    subject,
    results: results.map((r) => ({ ...r, outcome: known.outcome(r) })),
    unmatchedPatterns: known.unmatched(allNames),
    durationMs,
  };
}

/**
 * The run passes when no case failed unexpectedly, none passed unexpectedly, every pattern matched. A
 * case that did not apply (an optional feature the program has not got) is no failure.
 */
export function reportPassed(r: RunReport): boolean {
  return (
    r.unmatchedPatterns.length === 0 &&
    r.results.every(
      (x) => x.outcome === "passed" || x.outcome === "known-failing" || x.outcome === "not-applicable",
    )
  );
}

export function summaryLine(r: RunReport): string {
  const n = (o: Outcome) => r.results.filter((x) => x.outcome === o).length;
  const parts = [`${n("passed")} passed`, `${n("failed")} failed`];
  if (n("known-failing") > 0) parts.push(`${n("known-failing")} known failing`);
  if (n("not-applicable") > 0) parts.push(`${n("not-applicable")} not applicable`);
  if (n("unexpected-pass") > 0) parts.push(`${n("unexpected-pass")} passed but listed as known failing`);
  if (r.unmatchedPatterns.length > 0)
    parts.push(`${r.unmatchedPatterns.length} known-failing patterns match nothing`);
  const verdict = reportPassed(r) ? "PASS" : "FAIL";
  return `taskq-conformance ${r.mode}: ${verdict}: ${parts.join(", ")} (of ${r.results.length}) in ${(r.durationMs / 1000).toFixed(1)} s`;
}

/** What went wrong, case by case, for a terminal. */
export function failureDetails(r: RunReport): string {
  const lines: string[] = [];
  for (const x of r.results) {
    if (x.outcome === "failed") {
      lines.push(`FAIL ${x.name} [${levelName(x.level)}]`);
      for (const f of x.failures) lines.push(`    ${f}`);
      const tail = x.stderr.trim().split("\n").slice(-5);
      if (tail[0]) lines.push("    program stderr (tail):", ...tail.map((l) => `      ${l}`));
    } else if (x.outcome === "unexpected-pass") {
      lines.push(`PASS ${x.name}: listed as known failing; take it off the list`);
    }
  }
  for (const p of r.unmatchedPatterns) lines.push(`known-failing pattern "${p}" matches no case`);
  return lines.join("\n");
}

export function levelName(l: Level): string {
  switch (l) {
    case Level.REQUIRED:
      return "required";
    case Level.RECOMMENDED:
      return "recommended";
    case Level.OPTIONAL:
      return "optional";
    default:
      return "unspecified";
  }
}

const xml = (s: string) =>
  s.replace(
    /[<>&"']/g,
    (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[c] ?? c,
  );

/** JUnit XML: one testsuite, one testcase per case; known-failing and not applicable ones count as skipped. */
export function junitXml(r: RunReport): string {
  const failed = r.results.filter((x) => x.outcome === "failed" || x.outcome === "unexpected-pass").length;
  const skipped = r.results.filter(
    (x) => x.outcome === "known-failing" || x.outcome === "not-applicable",
  ).length;
  const cases = r.results.map((x) => {
    const open = `  <testcase classname="taskq-conformance.${r.mode}" name="${xml(x.name)}" time="${(x.durationMs / 1000).toFixed(3)}">`;
    if (x.outcome === "failed")
      return `${open}\n    <failure message="${xml(x.failures[0] ?? "failed")}">${xml(x.failures.join("\n"))}</failure>\n    <system-err>${xml(x.stderr)}</system-err>\n  </testcase>`;
    if (x.outcome === "unexpected-pass")
      return `${open}\n    <failure message="passed but listed as known failing"/>\n  </testcase>`;
    if (x.outcome === "known-failing")
      return `${open}\n    <skipped message="known failing"/>\n  </testcase>`;
    if (x.outcome === "not-applicable")
      return `${open}\n    <skipped message="${xml(`not applicable: ${x.notApplicable}`)}"/>\n  </testcase>`;
    return `${open}</testcase>`;
  });
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuite name="taskq-conformance ${r.mode}: ${xml(r.subject)}" tests="${r.results.length}" failures="${failed}" skipped="${skipped}" time="${(r.durationMs / 1000).toFixed(3)}">`,
    ...cases,
    `</testsuite>`,
    "",
  ].join("\n");
}

/** The JSON report: everything, traces included, for tools and for reading a failure closely. */
export function reportJson(r: RunReport): string {
  return `${JSON.stringify(
    { ...r, passed: reportPassed(r), results: r.results.map((x) => ({ ...x, level: levelName(x.level) })) },
    null,
    2,
  )}\n`;
}
