import type { Level } from "@taskq/sdk/conformance";

/** The verdict on one case. */
export interface CaseResult {
  name: string;
  level: Level;
  passed: boolean;
  /**
   * Why the case did not apply: an optional case whose features the program does not list in its Ready.
   * Such a case is neither passed nor failed.
   */
  notApplicable?: string | undefined;
  /** Why it failed; empty when it passed. */
  failures: string[];
  durationMs: number;
  /** The tail of the program's stderr. */
  stderr: string;
  /** The wire trace (worker mode) or the exchange (gateway mode), as JSON. */
  trace: unknown[];
}

/** How a case counts once the known-failing list is applied. */
export type Outcome = "passed" | "failed" | "known-failing" | "unexpected-pass" | "not-applicable";
