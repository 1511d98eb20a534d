import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { durationMs } from "@bufbuild/protobuf/wkt";
import {
  GatewayScriptSchema,
  Level,
  StartWorkerSchema,
  StopWorkerSchema,
  type WorkerCase,
} from "@taskq/sdk/conformance";
import { protoDir } from "../proto-dir.js";
import type { CaseResult } from "../results/case-result.js";
import { judge } from "./judge.js";
import { Program } from "./program.js";
import { startReferenceGateway } from "./reference-gateway.js";
import { Trace } from "./trace.js";

/** How the program under test is run. */
export interface ProgramSpec {
  /** Command line, e.g. ["python3", "adapter.py"]. */
  command: readonly string[];
  /**
   * Bearer token handed to the program in StartWorker.token (and TASKQ_TOKEN); unset hands it a token
   * generated for the case, so every run checks that every call carries the token it was given.
   */
  token?: string | undefined;
}

/** A token for a run that names none: random, so a program cannot pass by sending a fixed one. */
function generatedToken(): string {
  return `conformance-${randomBytes(12).toString("base64url")}`;
}

// Hard limits: a program that never says Ready, or never stops, fails its case instead of the run.
const READY_TIMEOUT_MS = 20_000;
const STOP_SLACK_MS = 8_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Run one case: a fresh reference gateway and a fresh program, judged on the wire trace. */
export async function runWorkerCase(k: WorkerCase, spec: ProgramSpec): Promise<CaseResult> {
  const trace = new Trace();
  const token = spec.token || generatedToken();
  const worker = create(StartWorkerSchema, k.worker);
  const gateway = await startReferenceGateway(
    k.script ?? create(GatewayScriptSchema),
    worker.queues[0] ?? "conformance",
    trace,
  );
  const program = new Program(spec.command, trace, {
    TASKQ_CONFORMANCE_PROTO_DIR: protoDir(),
    TASKQ_TOKEN: token,
  });
  try {
    program.start(create(StartWorkerSchema, { ...worker, gatewayUrl: gateway.url, token }));
    const ready = program.waitFor("ready", READY_TIMEOUT_MS);
    if (await Promise.race([ready, program.exited.then(() => false)])) {
      const notApplicable = missingFeatures(k, trace);
      if (notApplicable !== undefined) {
        // Nothing to judge: stop the program at once, and let it go.
        program.stop(create(StopWorkerSchema));
        if (!(await program.waitFor("exit", STOP_SLACK_MS))) {
          program.kill();
          await program.exited;
        }
        return result(k, trace, program, { passed: true, failures: [], notApplicable });
      }
      gateway.markReady(trace.first("ready")?.t ?? trace.now());
      const started = k.stopOnceStarted ? program.handlerStarted(k.stopOnceStarted) : new Promise(() => {});
      await Promise.race([sleep(k.stopAfter ? durationMs(k.stopAfter) : 1_000), program.exited, started]);
      const grace = k.stopGrace ?? worker.shutdownGrace;
      program.stop(create(StopWorkerSchema, k.stopGrace ? { grace: k.stopGrace } : {}));
      const limit = (grace ? durationMs(grace) : 0) + STOP_SLACK_MS;
      if (!(await program.waitFor("exit", limit))) {
        trace.add("protocol_error", { detail: `did not exit within ${limit} ms of the stop: killed` });
        program.kill();
        await program.exited;
      }
    } else if (!trace.first("exit")) {
      trace.add("protocol_error", { detail: `no Ready within ${READY_TIMEOUT_MS} ms: killed` });
      program.kill();
      await program.exited;
    }
  } finally {
    await gateway.stop();
  }
  const failures = judge(k, trace, token);
  return result(k, trace, program, { passed: failures.length === 0, failures });
}

/**
 * Why an optional case does not apply to the program: the features of the case its Ready did not list.
 * Undefined when the case applies (every case that is not LEVEL_OPTIONAL does).
 */
function missingFeatures(k: WorkerCase, trace: Trace): string | undefined {
  if (k.level !== Level.OPTIONAL) return undefined;
  const has = new Set(trace.first("ready")?.features ?? []);
  const missing = k.features.filter((f) => !has.has(f));
  return missing.length > 0
    ? `the program's Ready does not list the optional feature ${missing.join(", ")}`
    : undefined;
}

function result(
  k: WorkerCase,
  trace: Trace,
  program: Program,
  verdict: Pick<CaseResult, "passed" | "failures" | "notApplicable">,
): CaseResult {
  return {
    name: k.name,
    level: k.level,
    ...verdict,
    durationMs: trace.now(),
    stderr: program.stderr,
    trace: trace.toJSON(),
  };
}
