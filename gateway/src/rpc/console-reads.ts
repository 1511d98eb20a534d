import type { JsonObject } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { type AdminService, FailureSchema, JobState } from "@taskq/sdk/proto";
import { guarded, InvalidArgumentError } from "../errors.js";
import type { ConsoleReadStore, JobSummaryRow } from "../store/console-read-store.js";
import type { JobStateName } from "../store/types.js";
import { jobState } from "./convert.js";
import * as v from "./validate.js";

type ConsoleReadMethods = Pick<
  ServiceImpl<typeof AdminService>,
  "listJobs" | "listJobEvents" | "listBreakerEvents" | "queueActivity"
>;

const INT64_MAX = 9_223_372_036_854_775_807n;

const stateNames: Partial<Record<JobState, JobStateName>> = {
  [JobState.SCHEDULED]: "scheduled",
  [JobState.QUEUED]: "queued",
  [JobState.RUNNING]: "running",
  [JobState.SUCCEEDED]: "succeeded",
  [JobState.FAILED]: "failed",
  [JobState.CANCELLED]: "cancelled",
};

/** The AdminService reads behind the console's Queue page: wire <-> ConsoleReadStore. */
export function consoleReadMethods(reads: ConsoleReadStore): ConsoleReadMethods {
  const queue = (name: string) => v.queueName("queue", name);
  return {
    listJobs: guarded(async (req) => {
      const name = queue(req.queue);
      // UNSPECIFIED lists every state.
      const state = req.state === JobState.UNSPECIFIED ? null : stateNames[req.state];
      if (state === undefined)
        throw new InvalidArgumentError("state", "must be a job state, or UNSPECIFIED for all");
      if (req.beforeId !== undefined && (req.beforeId < 1n || req.beforeId > INT64_MAX))
        throw new InvalidArgumentError("before_id", `must be from 1 to ${INT64_MAX}`);
      const [jobs, total] = await Promise.all([
        reads.jobsList(name, state, req.limit ?? null, req.beforeId ?? null),
        reads.jobsCount(name, state),
      ]);
      return { jobs: jobs.map(jobSummary), total };
    }),
    listJobEvents: guarded(async (req) => ({
      events: (await reads.jobEvents(v.jobId("job_id", req.jobId))).map((e) => ({
        id: BigInt(e.id),
        eventType: e.event_type,
        data: e.data as JsonObject,
        createdAt: timestampFromMs(e.created_ms),
      })),
    })),
    listBreakerEvents: guarded(async (req) => ({
      events: (await reads.breakerEvents(queue(req.queue), req.limit ?? null)).map((e) => ({
        eventType: e.event_type,
        jobId: e.job_id ?? "",
        actor: e.actor ?? "",
        data: e.data as JsonObject,
        createdAt: timestampFromMs(e.created_ms),
      })),
    })),
    queueActivity: guarded(async (req) => ({
      minutes: (await reads.queueActivity(queue(req.queue), req.minutes ?? null)).map((m) => ({
        minute: timestampFromMs(m.minute_ms),
        claimed: BigInt(m.claimed),
        succeeded: BigInt(m.succeeded),
        failed: BigInt(m.failed),
        cancelled: BigInt(m.cancelled),
        avgRunMs: m.avg_run_ms ?? undefined,
        maxRunMs: m.max_run_ms ?? undefined,
        throttled: Object.fromEntries(Object.entries(m.throttled).map(([r, n]) => [r, BigInt(n)])),
      })),
    })),
  };
}

function jobSummary(j: JobSummaryRow) {
  const at = (ms: number | null) => (ms === null ? undefined : timestampFromMs(ms));
  return {
    id: j.id,
    state: jobState(j.state),
    priority: j.priority,
    attempt: j.attempt,
    maxAttempts: j.max_attempts,
    flowKey: j.flow_key ?? "",
    contentType: j.content_type,
    payloadBytes: j.payload_bytes,
    enqueuedAt: at(j.enqueued_ms),
    runAt: at(j.run_ms),
    startedAt: at(j.started_ms),
    finishedAt: at(j.finished_ms),
    outcome: j.outcome ?? "",
    lastError: j.last_error ? create(FailureSchema, j.last_error) : undefined,
    workerId: j.worker_id ?? "",
  };
}
