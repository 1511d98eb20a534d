import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type ClaimResponse,
  type HeartbeatRequest,
  type HeartbeatResponse,
  HeartbeatResponseSchema,
  LeaseState,
  type SettleResponse,
  type WorkerService,
} from "@taskq/sdk/proto";
import { requireQueues } from "../auth/auth.js";
import { principalOf } from "../auth/interceptor.js";
import type { Batcher } from "../batcher.js";
import type { Claimer } from "../claim/claimer.js";
import { DrainedQueues } from "../claim/drained.js";
import type { Poll } from "../claim/poll-loop.js";
import type { Config } from "../config.js";
import { InvalidArgumentError, toConnectError } from "../errors.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import type { Store } from "../store/store.js";
import {
  type ClaimedJob,
  type LeaseExtension,
  type LeaseOutcome,
  leaseKeys,
  type Settlement,
  type SettleOutcome,
} from "../store/types.js";
import { activeTracer, traceClaim, traceSettle } from "../tracing.js";
import type { WorkerRecords } from "../workers/worker-records.js";
import { jobsThatFit } from "./answer-size.js";
import type { ClaimFields } from "./claim-request-bytes.js";
import { optTs } from "./convert.js";
import { answerInOrder } from "./in-order.js";
import { pollsOf } from "./polls.js";
import { claimResponse, settleResponse } from "./responses.js";
import { requireJobScope } from "./scope.js";
import { decodeSettlement, type SettlementFields } from "./settlement-bytes.js";
import * as v from "./validate.js";
import { binaryCodec } from "./wire.js";

export interface WorkerDeps {
  config: Config;
  store: Store;
  claimer: Claimer;
  settles: Batcher<Settlement, SettleOutcome>;
  heartbeats: Batcher<LeaseExtension, LeaseOutcome>;
  log: Logger;
  /** Next retry delay for a failed attempt without its own retry_after, ms. */
  backoffMs: (attempt: number) => number;
  metrics?: Metrics;
  /** This gateway's summary of the workers polling it (the workers list); none in some tests. */
  records?: WorkerRecords;
}

const leaseState = {
  extended: LeaseState.EXTENDED,
  lease_lost: LeaseState.LEASE_LOST,
  cancel_requested: LeaseState.CANCEL_REQUESTED,
} as const;

/** WorkerService: wire <-> domain for Claim, ClaimOnce, Settle and Heartbeat; nothing else. */
export function workerService(d: WorkerDeps): ServiceImpl<typeof WorkerService> {
  return {
    claim: (requests, ctx) => claimStream(d, requests, ctx),
    claimOnce: (req, ctx) => claimOnce(d, req, ctx),
    settle: (requests, ctx) => settleStream(d, requests, ctx),
    heartbeat: (requests, ctx) => heartbeatStream(d, requests, ctx),
  };
}

/** One poll, validated, authorized, claimed and made into its answer. */
async function answerPoll(
  d: WorkerDeps,
  req: ClaimFields,
  ctx: HandlerContext,
  signal: AbortSignal,
  drained?: DrainedQueues,
  stream?: object,
): Promise<Answer> {
  const p = toPoll(req, d);
  // Looked up per poll, with the token's current roles and queues (a revoked token's open streams are
  // also ended at once: auth/interceptor.ts).
  const principal = principalOf(ctx);
  requireQueues(principal, p.queues);
  if (p.settlements.length > 0) await requireJobScope(d.store, principal, p.settlements);
  // The slots and prefetch the worker tells (0 slots: not told).
  const slots = req.concurrency ?? 0;
  d.records?.polled(stream, {
    workerId: p.workerId,
    queues: p.queues,
    maxJobs: p.maxJobs,
    concurrency: slots > 0 ? slots : null,
    prefetch: slots > 0 ? (req.prefetch ?? 0) : null,
  });
  // A span only when an OpenTelemetry SDK is registered (tracing.ts).
  const tracer = activeTracer();
  const res = tracer
    ? await traceClaim(tracer, p, () => d.claimer.poll(p, signal, drained))
    : await d.claimer.poll(p, signal, drained);
  if (d.metrics && res.settled) countSettled(d.metrics, p.settlements, res.settled);
  d.records?.answered(stream, p.workerId, res.verdicts);
  // An answer a client would refuse for its size fails every poll that claims the same jobs again.
  const fit = jobsThatFit(res.jobs);
  if (fit < res.jobs.length) await unclaim(d, res.jobs.slice(fit));
  const answer = fit < res.jobs.length ? { ...res, jobs: res.jobs.slice(0, fit) } : res;
  return { jobs: answer.jobs, response: claimResponse(answer, binaryCodec(ctx)) };
}

/** A Claim stream: one answer per poll, in order. */
async function* claimStream(
  d: WorkerDeps,
  requests: AsyncIterable<ClaimFields>,
  ctx: HandlerContext,
): AsyncGenerator<ClaimResponse> {
  // What this stream's polls found, so the next one may park without claiming (DrainedQueues).
  const drained = new DrainedQueues();
  // This stream in the workers list, until it ends.
  const stream = {};
  try {
    for await (const { req, signal } of pollsOf(requests, ctx.signal)) {
      const { jobs, response } = await answerPoll(d, req, ctx, signal, drained, stream);
      let delivered = false;
      try {
        // A token revoked while this poll was out gets the refusal, never the jobs claimed meanwhile.
        principalOf(ctx);
        yield response;
        delivered = true;
      } finally {
        // A claim whose response never reached the worker goes back at once, not at lease expiry.
        if (!delivered && jobs.length > 0) await release(d, jobs);
      }
    }
  } catch (err) {
    throw toConnectError(err);
  } finally {
    d.records?.closed(stream);
  }
}

async function claimOnce(d: WorkerDeps, req: ClaimFields, ctx: HandlerContext): Promise<ClaimResponse> {
  try {
    const { jobs, response } = await answerPoll(d, req, ctx, ctx.signal);
    let kept = false;
    try {
      // As in claim: a token revoked while the poll was out is answered the refusal, not the jobs.
      principalOf(ctx);
      kept = !ctx.signal.aborted;
    } finally {
      if (!kept && jobs.length > 0) await release(d, jobs);
    }
    return response;
  } catch (err) {
    throw toConnectError(err);
  }
}

async function* heartbeatStream(
  d: WorkerDeps,
  requests: AsyncIterable<HeartbeatRequest>,
  ctx: HandlerContext,
): AsyncGenerator<HeartbeatResponse> {
  try {
    for await (const req of requests) {
      const extensions = toExtensions(req);
      await requireJobScope(d.store, principalOf(ctx), extensions);
      const out = await d.heartbeats.add(extensions);
      yield create(HeartbeatResponseSchema, {
        leases: out.map((o) => ({
          lease: { jobId: o.jobId, attempt: o.attempt },
          state: leaseState[o.state],
          leaseDeadline: optTs(o.leaseDeadline),
        })),
      });
    }
  } catch (err) {
    throw toConnectError(err);
  }
}

/**
 * Answers a Settle stream whose requests hold settlements as messages (JSON codecs) or as their
 * encoded bytes (binary codecs, see by-bytes.ts): one response per request, in order, each
 * request applied as soon as it arrives (answerInOrder).
 */
export async function* settleStream(
  d: WorkerDeps,
  requests: AsyncIterable<{ settlements: readonly (SettlementFields | Uint8Array)[] }>,
  ctx: HandlerContext,
): AsyncGenerator<SettleResponse> {
  try {
    const binary = binaryCodec(ctx);
    const apply = async (req: { settlements: readonly (SettlementFields | Uint8Array)[] }) => {
      const batch = toSettlements(req.settlements, d);
      // Looked up per request: a token revoked while the stream is open is refused at its next batch.
      await requireJobScope(d.store, principalOf(ctx), batch);
      const tracer = activeTracer();
      const out = tracer
        ? await traceSettle(tracer, batch, () => d.settles.add(batch))
        : await d.settles.add(batch);
      if (d.metrics) countSettled(d.metrics, batch, out);
      return settleResponse(out, binary);
    };
    yield* answerInOrder(requests, apply);
  } catch (err) {
    throw toConnectError(err);
  }
}

/** One counter update per (outcome, status) of a batch, rather than one per settlement. */
function countSettled(metrics: Metrics, batch: readonly Settlement[], out: readonly SettleOutcome[]): void {
  const counts = new Map<string, number>();
  out.forEach((o, i) => {
    const key = `${batch[i]?.kind ?? ""}/${o.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  });
  for (const [key, n] of counts) {
    const [outcome = "", status = ""] = key.split("/");
    metrics.settled.inc({ outcome, status }, n);
  }
}

/** A poll's answer on the wire, and the jobs it carries (to put back if it cannot be delivered). */
interface Answer {
  response: ClaimResponse;
  jobs: readonly ClaimedJob[];
}

async function release(d: WorkerDeps, jobs: readonly ClaimedJob[]): Promise<void> {
  const queues = await d.store.jobsRelease(leaseKeys(jobs));
  await d.store.notifyQueues([...new Set(queues)]);
  d.log.info({ jobs: jobs.length }, "released claimed jobs whose response could not be delivered");
}

/** Claimed jobs that will not be sent (past the answer's size) are unclaimed: no attempt spent. */
async function unclaim(d: WorkerDeps, jobs: readonly ClaimedJob[]): Promise<void> {
  await d.store.jobsUnclaim(leaseKeys(jobs));
  await d.store.notifyQueues([...new Set(jobs.map((j) => j.queue))]);
}

function toPoll(req: ClaimFields, d: WorkerDeps): Poll & { settlements: Settlement[] } {
  v.count("queues", req.queues.length, 1, 64);
  const queues = [...new Set(req.queues.map((q, i) => v.queueName(`queues[${i}]`, q)))];
  v.maxBytes("worker_id", req.workerId, 255);
  const maxJobs = v.intRange("max_jobs", req.maxJobs, 1, 1000);
  // A worker that says its slots says its buffer too: beyond it, max_jobs are free handler slots.
  const slots = req.concurrency ?? 0;
  return {
    queues,
    maxJobs,
    freeSlots: slots > 0 ? Math.max(0, maxJobs - (req.prefetch ?? 0)) : undefined,
    maxWaitMs: v.durationMs("max_wait", req.maxWait, 0, 60_000) ?? 0,
    workerId: req.workerId,
    leaseMs: v.durationMs("lease_duration", req.leaseDuration, 100, 3_600_000) ?? d.config.defaultLeaseMs,
    settlements: req.settlements.length === 0 ? [] : toSettlements(req.settlements, d),
  };
}

function toSettlements(settlements: readonly (SettlementFields | Uint8Array)[], d: WorkerDeps): Settlement[] {
  v.count("settlements", settlements.length, 1, 1000);
  return settlements.map((input, i) => {
    try {
      return toSettlement(input, d);
    } catch (err) {
      throw err instanceof InvalidArgumentError ? err.under(`settlements[${i}]`) : err;
    }
  });
}

/** One settlement, validated with field names relative to it (toSettlements adds `settlements[i]`). */
function toSettlement(input: SettlementFields | Uint8Array, d: WorkerDeps): Settlement {
  const s = input instanceof Uint8Array ? decodeSettlement(input, "") : input;
  if (!s.lease) throw new InvalidArgumentError("lease", "is required");
  const jobId = v.jobId("lease.job_id", s.lease.jobId);
  const attempt = v.intRange("lease.attempt", s.lease.attempt, 1, 1_000_000);
  const durationMs = v.durationMs("duration", s.duration, 0, 7 * 86_400_000) ?? null;
  const o = s.outcome;
  switch (o.case) {
    case "success":
      v.maxBytes("success.result", o.value.result, d.config.maxPayloadBytes);
      return { jobId, attempt, durationMs, kind: "success", result: o.value.result };
    case "cancelled":
      v.maxBytes("cancelled.reason", o.value.reason, 4096);
      return { jobId, attempt, durationMs, kind: "cancel", reason: o.value.reason };
    case "released":
      v.maxBytes("released.reason", o.value.reason, 4096);
      return { jobId, attempt, durationMs, kind: "release", reason: o.value.reason };
    case "failure": {
      v.maxBytes("failure.type", o.value.type, 255);
      v.maxBytes("failure.message", o.value.message, 16 * 1024);
      const own = v.durationMs("failure.retry_after", o.value.retryAfter, 0, 7 * 86_400_000);
      return {
        jobId,
        attempt,
        durationMs,
        kind: "failure",
        error: { type: o.value.type, message: o.value.message, retryable: o.value.retryable },
        delayMs: o.value.retryable ? (own ?? d.backoffMs(attempt)) : null,
      };
    }
    default:
      throw new InvalidArgumentError(
        "outcome",
        "is required (one of success, failure, cancelled or released)",
      );
  }
}

function toExtensions(req: HeartbeatRequest): LeaseExtension[] {
  v.count("leases", req.leases.length, 1, 10_000);
  const extendMs = v.durationMs("extend_by", req.extendBy, 100, 3_600_000) ?? null;
  return req.leases.map((l, i) => ({
    jobId: v.jobId(`leases[${i}].job_id`, l.jobId),
    attempt: v.intRange(`leases[${i}].attempt`, l.attempt, 1, 1_000_000),
    extendMs,
  }));
}
