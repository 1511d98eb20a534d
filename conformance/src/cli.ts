#!/usr/bin/env node
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { builtInCasesDir, loadGatewayCases, loadWorkerCases } from "./cases/load-cases.js";
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
import { runGatewaySuite, runWorkerSuite, selectCases } from "./suite.js";

const usage = `Usage:
  taskq-conformance worker [options] -- <command> [args...]
      Run each worker-mode case against a fresh copy of the program under test (see README.md).
  taskq-conformance gateway --url <grpc url> [options]
      Drive the gateway at <grpc url> (e.g. http://127.0.0.1:7070, or https://… with TLS) with the
      reference worker client.

Options:
  --cases <dir>           case files to run (default: the suite's own cases/<mode>)
  --run <glob>            only cases whose name matches (repeatable), e.g. "verdict/*"
  --required-only         skip recommended cases
  --skip-feature <name>   skip cases relying on this feature (repeatable), e.g. "reconnect"
  --known-failing <file>  cases expected to fail; a listed case that passes fails the run
  --junit <file>          write JUnit XML
  --json <file>           write the full JSON report (wire traces included)
  --parallel <n>          cases at once (default 3)
  --token <token>         bearer token to send (default: $TASKQ_TOKEN); worker mode hands it to the
                          program, or a token generated for each case when neither is set
  --ca-file <file>        gateway mode, https:// url: PEM CA to trust instead of the system's ($TASKQ_CA_FILE)
  --cert-file <file>      gateway mode: PEM client certificate for a gateway with mutual TLS ($TASKQ_CERT_FILE)
  --key-file <file>       gateway mode: PEM key of --cert-file ($TASKQ_KEY_FILE)
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
      "skip-feature": { type: "string", multiple: true },
      "known-failing": { type: "string" },
      junit: { type: "string" },
      json: { type: "string" },
      parallel: { type: "string" },
      token: { type: "string" },
      url: { type: "string" },
      "ca-file": { type: "string" },
      "cert-file": { type: "string" },
      "key-file": { type: "string" },
      verbose: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const [mode] = positionals;
  const parallel = Number(values.parallel ?? 3);
  if (!Number.isInteger(parallel) || parallel < 1) {
    console.error(`--parallel wants a positive integer, got ${values.parallel}`);
    return 2;
  }
  const known = values["known-failing"]
    ? KnownFailing.fromFile(values["known-failing"])
    : new KnownFailing([]);
  const selection = {
    run: values.run ?? [],
    requiredOnly: values["required-only"] ?? false,
    skipFeatures: values["skip-feature"] ?? [],
  };
  const token = values.token ?? process.env.TASKQ_TOKEN;
  const casesDir = (m: string) => values.cases ?? fileURLToPath(new URL(`${m}/`, builtInCasesDir));
  const progress = (r: CaseResult) => {
    if (values.verbose)
      console.error(
        `${r.notApplicable !== undefined ? "n/a " : r.passed ? "pass" : "FAIL"} ${r.name} [${levelName(r.level)}] ${Math.round(r.durationMs)} ms`,
      );
  };
  const started = performance.now();
  if (mode === "worker" && command.length > 0) {
    const cases = selectCases(loadWorkerCases(casesDir("worker")), selection);
    if (cases.length === 0) return noCases();
    const results = await runWorkerSuite(cases, { command, token }, parallel, progress);
    const names = cases.map((c) => c.name);
    const report = buildReport(
      "worker",
      command.join(" "),
      results,
      known,
      performance.now() - started,
      names,
    );
    return finish(report, values.junit, values.json);
  }
  if (mode === "gateway" && values.url) {
    const cases = selectCases(loadGatewayCases(casesDir("gateway")), selection);
    if (cases.length === 0) return noCases();
    const tls = {
      ca: pemFile(values["ca-file"] ?? process.env.TASKQ_CA_FILE),
      cert: pemFile(values["cert-file"] ?? process.env.TASKQ_CERT_FILE),
      key: pemFile(values["key-file"] ?? process.env.TASKQ_KEY_FILE),
    };
    const results = await runGatewaySuite(cases, { url: values.url, token, tls }, parallel, progress);
    const names = cases.map((c) => c.name);
    const report = buildReport("gateway", values.url, results, known, performance.now() - started, names);
    return finish(report, values.junit, values.json);
  }
  console.error(usage);
  return 2;
}

/** A PEM file's bytes; unset or empty is undefined. A file that cannot be read fails the run (exit 2). */
function pemFile(path: string | undefined): Buffer | undefined {
  if (!path) return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`${path}: cannot read it (${(err as NodeJS.ErrnoException).code})`);
  }
}

function noCases(): number {
  console.error("no case matches the selection");
  return 2;
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
