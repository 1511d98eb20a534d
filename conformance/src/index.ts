// Public API of @taskq/conformance: run the suite from code (the CLI is src/cli.ts).

/** Load case files. */
export { builtInCasesDir, loadGatewayCases, loadWorkerCases } from "./cases/load-cases.js";
/** One gateway-mode case. */
export { type GatewaySpec, runGatewayCase } from "./gateway-mode/run-gateway-case.js";
/** Per-case results. */
export type { CaseResult, Outcome } from "./results/case-result.js";
/** Known-failing lists. */
export { KnownFailing } from "./results/known-failing.js";
/** Reports: summary line, JUnit XML, JSON. */
export {
  buildReport,
  junitXml,
  type RunReport,
  reportJson,
  reportPassed,
  summaryLine,
} from "./results/report.js";
/** Select and run cases. */
export { runGatewaySuite, runWorkerSuite, type Selection, selectCases } from "./suite.js";
/** One worker-mode case. */
export { type ProgramSpec, runWorkerCase } from "./worker-mode/run-case.js";
