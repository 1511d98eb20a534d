#!/usr/bin/env node
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { builtInCasesDir, loadWorkerCases } from "./cases/load-cases.js";
import type { CaseResult } from "./results/case-result.js";
import { KnownFailing } from "./results/known-failing.js";
import {
  buildReport,
  failureDetails,
  junitXml,
  levelName,
  type RunReport,
  reportJson,
  reportPassed,
  summaryLine,
} from "./results/report.js";
import { runWorkerSuite, selectCases } from "./suite.js";

const usage = `Usage:
  taskq-conformance worker [options] -- <command> [args...]
      Run each worker-mode case against a fresh copy of the program under test (see README.md).

Options:
  --cases <dir>           case files to run (default: the suite's own cases/worker)
  --run <glob>            only cases whose name matches (repeatable), e.g. "verdict/*"
  --required-only         skip recommended cases
  --known-failing <file>  cases expected to fail; a listed case that passes fails the run
  --junit <file>          write JUnit XML
  --json <file>           write the full JSON report (wire traces included)
  --parallel <n>          cases at once (default 3)
  --token <token>         bearer token for the program to send (default: $TASKQ_TOKEN)
  --verbose               print every case as it finishes
Exit status: 0 when the run passes, 1 when it fails, 2 on bad usage.`;

async function main(argv: string[]): Promise<number> {
  const dash = argv.indexOf("--");
  const command = dash >= 0 ? argv.slice(dash + 1) : [];
  const { values, positionals } = parseArgs({
    args: dash >= 0 ? argv.slice(0, dash) : argv,
    allowPositionals: true,
    options: {
      cases: { type: "string" },
      run: { type: "string", multiple: true },
      "required-only": { type: "boolean" },
      "known-failing": { type: "string" },
      junit: { type: "string" },
      json: { type: "string" },
      parallel: { type: "string" },
      token: { type: "string" },
      verbose: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const [mode] = positionals;
  if (mode !== "worker" || command.length === 0) {
    console.error(usage);
    return 2;
  }
  const parallel = Number(values.parallel ?? 3);
  if (!Number.isInteger(parallel) || parallel < 1) {
    console.error(`--parallel wants a positive integer, got ${values.parallel}`);
    return 2;
  }
  const known = values["known-failing"]
    ? KnownFailing.fromFile(values["known-failing"])
    : new KnownFailing([]);
  const all = loadWorkerCases(
    values.cases ?? fileURLToPath(builtInCasesDir.href.replace(/\/?$/, "/worker/")),
  );
  const cases = selectCases(all, { run: values.run ?? [], requiredOnly: values["required-only"] ?? false });
  if (cases.length === 0) {
    console.error("no case matches the selection");
    return 2;
  }
  const started = performance.now();
  const progress = (r: CaseResult) => {
    if (values.verbose)
      console.error(
        `${r.passed ? "pass" : "FAIL"} ${r.name} [${levelName(r.level)}] ${Math.round(r.durationMs)} ms`,
      );
  };
  const token = values.token ?? process.env.TASKQ_TOKEN;
  const results = await runWorkerSuite(cases, { command, token }, parallel, progress);
  const report = buildReport(
    "worker",
    command.join(" "),
    results,
    known,
    performance.now() - started,
    cases.map((c) => c.name),
  );
  return finish(report, values.junit, values.json);
}

function finish(report: RunReport, junit: string | undefined, json: string | undefined): number {
  if (junit) writeFileSync(junit, junitXml(report));
  if (json) writeFileSync(json, reportJson(report));
  const details = failureDetails(report);
  if (details) console.log(details);
  console.log(summaryLine(report));
  return reportPassed(report) ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 2;
  },
);
