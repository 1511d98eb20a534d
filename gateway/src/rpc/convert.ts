import { create } from "@bufbuild/protobuf";
import { type Duration, DurationSchema, type Timestamp, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  FailureSchema,
  type Job,
  type JobAttempt,
  JobAttemptSchema,
  type JobInfo,
  JobInfoSchema,
  JobSchema,
  JobState,
} from "@taskq/sdk/proto";
import type { AttemptRecord, ClaimedJob, JobRecord, JobStateName } from "../store/types.js";

export const ts = (d: Date): Timestamp => timestampFromMs(d.getTime());
export const optTs = (d: Date | null): Timestamp | undefined => (d ? ts(d) : undefined);

export function durationFromMs(ms: number): Duration {
  const whole = Math.max(0, Math.ceil(ms));
  return create(DurationSchema, { seconds: BigInt(Math.floor(whole / 1000)), nanos: (whole % 1000) * 1e6 });
}

const stateNames: Record<JobStateName, JobState> = {
  scheduled: JobState.SCHEDULED,
  queued: JobState.QUEUED,
  running: JobState.RUNNING,
  succeeded: JobState.SUCCEEDED,
  failed: JobState.FAILED,
  cancelled: JobState.CANCELLED,
};

export const jobState = (s: JobStateName | null): JobState => (s ? stateNames[s] : JobState.UNSPECIFIED);

export function claimedJob(j: ClaimedJob): Job {
  return create(JobSchema, {
    id: j.id,
    queue: j.queue,
    attempt: j.attempt,
    maxAttempts: j.maxAttempts,
    leaseDeadline: timestampFromMs(Math.floor(j.leaseDeadlineMs)),
    payload: j.payload,
    contentType: j.contentType,
    priority: j.priority,
    flowKey: j.flowKey ?? "",
    enqueuedAt: timestampFromMs(Math.floor(j.enqueuedAtMs)),
    headers: j.headers,
  });
}

export function jobInfo(j: JobRecord): JobInfo {
  return create(JobInfoSchema, {
    id: j.id,
    queue: j.queue,
    state: jobState(j.state),
    attempt: j.attempt,
    maxAttempts: j.maxAttempts,
    priority: j.priority,
    flowKey: j.flowKey ?? "",
    payload: j.payload,
    contentType: j.contentType,
    headers: j.headers,
    enqueuedAt: ts(j.enqueuedAt),
    runAt: ts(j.runAt),
    startedAt: optTs(j.startedAt),
    finishedAt: optTs(j.finishedAt),
    leaseDeadline: optTs(j.leaseDeadline),
    expiresAt: optTs(j.expiresAt),
    outcome: j.outcome ?? "",
    result: j.result ?? new Uint8Array(0),
    lastError: j.lastError ? create(FailureSchema, j.lastError) : undefined,
    cancelRequested: j.cancelRequested,
    workerId: j.workerId ?? "",
  });
}

export function jobAttempt(a: AttemptRecord): JobAttempt {
  return create(JobAttemptSchema, {
    attempt: a.attempt,
    workerId: a.workerId ?? "",
    gateway: a.gateway ?? "",
    claimedAt: optTs(a.claimedAt),
    finishedAt: optTs(a.finishedAt),
    outcome: a.outcome,
    error: a.error ? create(FailureSchema, a.error) : undefined,
    duration: a.durationMs === null ? undefined : durationFromMs(a.durationMs),
  });
}
