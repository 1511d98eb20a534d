import type { Level } from "@taskq/sdk/conformance";

/** The verdict on one case. */
export interface CaseResult {
  name: string;
  level: Level;
  passed: boolean;
  /** Why it failed; empty when it passed. */
  failures: string[];
  durationMs: number;
  /** The tail of the program's stderr. */
  stderr: string;
  /** The wire trace (worker mode) or the exchange (gateway mode), as JSON. */
  trace: unknown[];
}

/** How a case counts once the known-failing list is applied. */
export type Outcome = "passed" | "failed" | "known-failing" | "unexpected-pass";
