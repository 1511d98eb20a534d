import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  type Explanation as ExplanationMessage,
  ExplanationSchema,
  FailureSchema,
  ThrottleReason,
} from "@taskq/sdk/proto";
import { guarded } from "../errors.js";
import type { Explainer, Explanation } from "../explain/explain.js";
import { jobState } from "./convert.js";
import * as v from "./validate.js";

type ExplainMethods = Pick<ServiceImpl<typeof AdminService>, "explainJob" | "explainQueue">;

/** AdminService.ExplainJob and ExplainQueue: wire <-> Explainer. */
export function explainMethods(explainer: Explainer): ExplainMethods {
  return {
    explainJob: guarded(async (req) => ({
      explanation: explanation(await explainer.job(v.jobId("job_id", req.jobId))),
    })),
    explainQueue: guarded(async (req) => ({
      explanation: explanation(await explainer.queue(v.queueName("queue", req.queue))),
    })),
  };
}

const at = (ms: number | null | undefined) => (ms == null ? undefined : timestampFromMs(Math.floor(ms)));

export function explanation(e: Explanation): ExplanationMessage {
  const j = e.job;
  return create(ExplanationSchema, {
    queue: e.queue,
    jobId: j?.id ?? "",
    state: jobState(j?.state ?? null),
    reasons: e.reasons.map((r) => ({
      gate: r.gate,
      verdict: r.verdict ? ThrottleReason[r.verdict] : ThrottleReason.UNSPECIFIED,
      blocking: r.blocking,
      summary: r.summary,
      figures: r.figures as JsonObject,
      nextAt: at(r.nextAtMs),
    })),
    firstBlocking: e.firstBlocking?.gate ?? "",
    estimatedStart: at(e.estimatedStartMs),
    summary: e.summary,
    attempt: j?.attempt ?? 0,
    maxAttempts: j?.max_attempts ?? 0,
    workerId: j?.worker_id ?? "",
    startedAt: at(j?.started_ms),
    leaseDeadline: at(j?.state === "running" ? j.lease_deadline_ms : null),
    finishedAt: at(j?.finished_ms),
    outcome: j?.outcome ?? "",
    lastError: j?.last_error ? create(FailureSchema, j.last_error) : undefined,
  });
}
