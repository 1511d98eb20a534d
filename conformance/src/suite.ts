import { type GatewayCase, Level, type WorkerCase } from "@taskq/sdk/conformance";
import { type GatewaySpec, runGatewayCase } from "./gateway-mode/run-gateway-case.js";
import { globToRegExp } from "./glob.js";
import type { CaseResult } from "./results/case-result.js";
import { type ProgramSpec, runWorkerCase } from "./worker-mode/run-case.js";

/** Which cases to run. */
export interface Selection {
  /** Glob patterns on case names; empty runs all. */
  run: readonly string[];
  /** Skip recommended cases. */
  requiredOnly: boolean;
  /** Skip cases relying on any of these features (an implementation that has not got them yet). */
  skipFeatures?: readonly string[];
}

export function selectCases<T extends { name: string; level: Level; features: string[] }>(
  cases: readonly T[],
  s: Selection,
): T[] {
  const res = s.run.map(globToRegExp);
  const skip = new Set(s.skipFeatures ?? []);
  return cases.filter(
    (c) =>
      (res.length === 0 || res.some((re) => re.test(c.name))) &&
      (!s.requiredOnly || c.level === Level.REQUIRED) &&
      !c.features.some((f) => skip.has(f)),
  );
}

/** Run `items` through `fn`, at most `parallel` at once, results in input order. */
export async function pool<T, R>(
  items: readonly T[],
  parallel: number,
  fn: (x: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(parallel, items.length)) }, lane));
  return out;
}

/** Worker mode: each case against a fresh program; one crash fails one case, not the run. */
export function runWorkerSuite(
  cases: readonly WorkerCase[],
  spec: ProgramSpec,
  parallel: number,
  progress: (r: CaseResult) => void = () => {},
): Promise<CaseResult[]> {
  return pool(cases, parallel, async (k) => {
    const r = await runWorkerCase(k, spec);
    progress(r);
    return r;
  });
}

/** Gateway mode: each case on a queue of its own, against one gateway. */
export function runGatewaySuite(
  cases: readonly GatewayCase[],
  spec: GatewaySpec,
  parallel: number,
  progress: (r: CaseResult) => void = () => {},
): Promise<CaseResult[]> {
  return pool(cases, parallel, async (k) => {
    const r = await runGatewayCase(k, spec);
    progress(r);
    return r;
  });
}
