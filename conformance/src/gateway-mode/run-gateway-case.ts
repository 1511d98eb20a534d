import { randomBytes } from "node:crypto";
import { toJson } from "@bufbuild/protobuf";
import { type GatewayCase, GatewayStepSchema } from "@taskq/sdk/conformance";
import type { CaseResult } from "../results/case-result.js";
import { Session } from "./session.js";
import { runStep } from "./steps.js";
import { statusName, type WireTls } from "./wire-client.js";

/** Where the gateway under test listens, and how to authenticate. */
export interface GatewaySpec {
  /** gRPC address, e.g. http://127.0.0.1:7070. */
  url: string;
  token?: string | undefined;
  /** For an https:// url: a PEM CA to trust instead of the system's; a client certificate and key for mTLS. */
  tls?: WireTls | undefined;
}

/** Run one gateway case on a queue of its own; the first step that goes wrong fails it. */
export async function runGatewayCase(k: GatewayCase, spec: GatewaySpec): Promise<CaseResult> {
  const started = performance.now();
  const queue = `conformance.${k.name.replace("/", ".")}.${randomBytes(4).toString("hex")}`;
  const session = new Session(spec.url, spec.token, queue, spec.tls);
  const trace: unknown[] = [];
  const failures: string[] = [];
  try {
    for (const [i, step] of k.steps.entries()) {
      const at = `step ${i + 1} (${step.action.case})`;
      const record = (x: unknown) =>
        trace.push({ step: i + 1, t: Math.round(performance.now() - started), ...(x as object) });
      trace.push({ step: i + 1, request: toJson(GatewayStepSchema, step) });
      let got: string[];
      try {
        got = await runStep(session, step, record);
        if (step.error) got.push(`succeeded, want ${step.error}`);
      } catch (err) {
        const code = statusName(err);
        record({ error: code ?? String(err) });
        if (!step.error || code !== step.error)
          got = [`failed with ${code ?? (err as Error).message}, want ${step.error || "success"}`];
        else got = [];
      }
      if (got.length > 0) {
        failures.push(...got.map((f) => `${at}: ${f}`));
        break;
      }
    }
  } finally {
    await Promise.allSettled(session.background);
    session.close();
  }
  return {
    name: k.name,
    level: k.level,
    passed: failures.length === 0,
    failures,
    durationMs: performance.now() - started,
    stderr: "",
    trace,
  };
}
