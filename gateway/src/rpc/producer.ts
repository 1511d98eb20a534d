import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  CancelJobResponseSchema,
  type EnqueueBatchRequest,
  EnqueueBatchResponseSchema,
  EnqueueResponseSchema,
  EnqueueStreamResponseSchema,
  GetJobResponseSchema,
  type JobSpec,
  type ProducerService,
} from "@taskq/sdk/proto";
import { requireQueues } from "../auth/auth.js";
import { principalOf } from "../auth/interceptor.js";
import type { Config } from "../config.js";
import { guarded, InvalidArgumentError, NotFoundError, toConnectError } from "../errors.js";
import type { Store } from "../store/store.js";
import type { EnqueuedJob, NewJob } from "../store/types.js";
import { activeTracer, traceEnqueue } from "../tracing.js";
import { jobAttempt, jobInfo } from "./convert.js";
import { answerInOrder } from "./in-order.js";
import { requireJobScope } from "./scope.js";
import * as v from "./validate.js";

export interface ProducerDeps {
  config: Config;
  store: Store;
  /** Writes a batch of jobs (Claimer.enqueue: hands them to polls parked here). */
  enqueue: (batch: readonly NewJob[]) => Promise<EnqueuedJob[]>;
}

/** ProducerService: wire <-> domain for Enqueue, EnqueueBatch, EnqueueStream, GetJob and CancelJob. */
export function producerService(d: ProducerDeps): ServiceImpl<typeof ProducerService> {
  // In a span only when an OpenTelemetry SDK is registered (tracing.ts).
  const enqueueTraced = (batch: NewJob[]) => {
    const tracer = activeTracer();
    return tracer ? traceEnqueue(tracer, batch, () => d.enqueue(batch)) : d.enqueue(batch);
  };
  const enqueueBatch = async (req: EnqueueBatchRequest, ctx: HandlerContext) => {
    v.count("jobs", req.jobs.length, 1, 1000);
    const batch = req.jobs.map((j, i) => toNewJob(`jobs[${i}]`, j, d.config));
    requireQueues(
      principalOf(ctx),
      batch.map((j) => j.queue),
    );
    const out = await enqueueTraced(batch);
    return out.map((r) => ({ jobId: r.id, duplicate: r.duplicate }));
  };
  return {
    enqueue: guarded(async (req, ctx) => {
      if (!req.job) throw new InvalidArgumentError("job", "is required");
      const job = toNewJob("job", req.job, d.config);
      requireQueues(principalOf(ctx), [job.queue]);
      const [out] = await enqueueTraced([job]);
      return create(EnqueueResponseSchema, { jobId: out?.id, duplicate: out?.duplicate });
    }),
    enqueueBatch: guarded(async (req, ctx) =>
      create(EnqueueBatchResponseSchema, { results: await enqueueBatch(req, ctx) }),
    ),
    // A failed batch is answered with its error and the stream goes on; only a broken stream ends it.
    async *enqueueStream(requests, ctx) {
      const apply = async (req: EnqueueBatchRequest) => {
        try {
          return create(EnqueueStreamResponseSchema, { results: await enqueueBatch(req, ctx) });
        } catch (err) {
          const e = toConnectError(err);
          return create(EnqueueStreamResponseSchema, { error: { code: e.code, message: e.rawMessage } });
        }
      };
      try {
        yield* answerInOrder(requests, apply);
      } catch (err) {
        throw toConnectError(err);
      }
    },
    getJob: guarded(async (req, ctx) => {
      const job = await d.store.jobGet(v.jobId("job_id", req.jobId));
      if (!job) throw new NotFoundError(`job ${req.jobId} not found`);
      requireQueues(principalOf(ctx), [job.queue]);
      const attempts = await d.store.jobAttempts(job);
      return create(GetJobResponseSchema, { job: jobInfo(job), attempts: attempts.map(jobAttempt) });
    }),
    cancelJob: guarded(async (req, ctx) => {
      v.maxBytes("reason", req.reason, 4096);
      const id = v.jobId("job_id", req.jobId);
      await requireJobScope(d.store, principalOf(ctx), [{ jobId: id }]);
      const job = await d.store.jobCancel(id, req.reason);
      if (!job) throw new NotFoundError(`job ${req.jobId} not found`);
      return create(CancelJobResponseSchema, { job: jobInfo(job) });
    }),
  };
}

function toNewJob(at: string, j: JobSpec, config: Config): NewJob {
  v.maxBytes(`${at}.payload`, j.payload, config.maxPayloadBytes);
  v.maxBytes(`${at}.content_type`, j.contentType, 255);
  v.maxBytes(`${at}.flow_key`, j.flowKey, 255);
  v.maxBytes(`${at}.idempotency_key`, j.idempotencyKey, 255);
  const headers = Object.entries(j.headers);
  v.count(`${at}.headers`, headers.length, 0, 64);
  for (const [k, val] of headers) {
    v.maxBytes(`${at}.headers[${k.slice(0, 64)}]`, k + val, 8192);
  }
  const s = j.schedule;
  return {
    queue: v.queueName(`${at}.queue`, j.queue),
    payload: j.payload,
    contentType: j.contentType,
    priority: v.intRange(`${at}.priority`, j.priority, -32768, 32767),
    flowKey: j.flowKey === "" ? null : j.flowKey,
    runAt: s.case === "runAt" ? v.timestamp(`${at}.run_at`, s.value) : null,
    delayMs:
      s.case === "delay" ? (v.durationMs(`${at}.delay`, s.value, 0, 10 * 365 * 86_400_000) ?? null) : null,
    ttlSeconds: v.intRange(`${at}.ttl_seconds`, j.ttlSeconds, 0, 10 * 365 * 86_400),
    maxAttempts:
      j.maxAttempts === 0
        ? config.defaultMaxAttempts
        : v.intRange(`${at}.max_attempts`, j.maxAttempts, 1, 1000),
    idempotencyKey: j.idempotencyKey === "" ? null : j.idempotencyKey,
    headers: j.headers,
  };
}
