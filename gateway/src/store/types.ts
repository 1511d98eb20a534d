/** Job states as stored. "scheduled" waits for run_at; "queued" is ready to claim. */
export type JobStateName = "scheduled" | "queued" | "running" | "succeeded" | "failed" | "cancelled";

/** A job to insert, already validated. */
export interface NewJob {
  queue: string;
  payload: Uint8Array;
  contentType: string;
  priority: number;
  flowKey: string | null;
  /** Absolute start time; wins over delayMs. */
  runAt: Date | null;
  delayMs: number | null;
  /** 0 = no TTL. */
  ttlSeconds: number;
  maxAttempts: number;
  idempotencyKey: string | null;
  headers: Record<string, string>;
}

export interface EnqueuedJob {
  id: string;
  /** True when the idempotency key matched an existing job. */
  duplicate: boolean;
}

export interface ClaimedJob {
  id: string;
  queue: string;
  attempt: number;
  maxAttempts: number;
  /** Epoch ms (Postgres's clock). */
  leaseDeadlineMs: number;
  payload: Uint8Array;
  contentType: string;
  priority: number;
  flowKey: string | null;
  /** Epoch ms (Postgres's clock). */
  enqueuedAtMs: number;
  headers: Record<string, string>;
}

export interface LeaseKey {
  jobId: string;
  attempt: number;
}

/** The leases of claimed jobs, to put back or release. */
export function leaseKeys(jobs: Iterable<Pick<ClaimedJob, "id" | "attempt">>): LeaseKey[] {
  return Array.from(jobs, (j) => ({ jobId: j.id, attempt: j.attempt }));
}

export interface FailureInfo {
  type: string;
  message: string;
  retryable: boolean;
}

export type Settlement = LeaseKey & {
  /** How long the handler ran (SettleRequest.duration), for the breaker's latency trigger. */
  durationMs?: number | null;
} & (
    | { kind: "success"; result: Uint8Array }
    | { kind: "cancel"; reason: string }
    /** The worker never started the job and gives it back (prefetch): ready again, attempt uncounted. */
    | { kind: "release"; reason: string }
    /** delayMs: wait before the next attempt; null when the failure is not retryable. */
    | { kind: "failure"; error: FailureInfo; delayMs: number | null }
  );

export type SettleStatusName = "accepted" | "lease_lost" | "conflict" | "not_found";

export interface SettleOutcome extends LeaseKey {
  status: SettleStatusName;
  /** The job's state after an accepted settle. */
  state: JobStateName | null;
  /** When a retried job becomes ready again. */
  nextRunAt: Date | null;
  queue: string | null;
}

export interface LeaseExtension extends LeaseKey {
  /** null extends by the lease length the job was claimed with. */
  extendMs: number | null;
}

export interface LeaseOutcome extends LeaseKey {
  state: "extended" | "lease_lost" | "cancel_requested";
  leaseDeadline: Date | null;
}

export interface JobRecord {
  id: string;
  queue: string;
  state: JobStateName;
  attempt: number;
  maxAttempts: number;
  priority: number;
  flowKey: string | null;
  payload: Uint8Array;
  contentType: string;
  headers: Record<string, string>;
  enqueuedAt: Date;
  runAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  leaseDeadline: Date | null;
  expiresAt: Date | null;
  outcome: string | null;
  result: Uint8Array | null;
  lastError: FailureInfo | null;
  cancelRequested: boolean;
  workerId: string | null;
}

/**
 * How an attempt ended: stored for each that did not succeed ("failed", "cancelled", "released",
 * "lease_expired"); "running" and "succeeded" describe the job's current attempt from its own row.
 */
export type AttemptOutcome = "failed" | "cancelled" | "released" | "lease_expired" | "running" | "succeeded";

/** One attempt of a job (taskq.job_attempts, or the job's current attempt). */
export interface AttemptRecord {
  attempt: number;
  workerId: string | null;
  /** The instance id of the gateway that ended it; null when not known. */
  gateway: string | null;
  claimedAt: Date | null;
  /** null while it runs. */
  finishedAt: Date | null;
  outcome: AttemptOutcome;
  error: FailureInfo | null;
  /** Reported by the worker, else claimedAt to finishedAt; null while it runs. */
  durationMs: number | null;
}
