/** Protobuf JSON of a JobSummary (and the JobInfo fields the job page shares with it). */
export interface JobJson {
  id: string;
  queue?: string;
  state?: string;
  priority?: number;
  attempt?: number;
  maxAttempts?: number;
  flowKey?: string;
  contentType?: string;
  payloadBytes?: number;
  enqueuedAt?: string;
  runAt?: string;
  startedAt?: string;
  finishedAt?: string;
  leaseDeadline?: string;
  expiresAt?: string;
  outcome?: string;
  lastError?: { type?: string; message?: string; retryable?: boolean };
  workerId?: string;
  headers?: Record<string, string>;
  payload?: string;
  result?: string;
  cancelRequested?: boolean;
}

/** The job states a queue's jobs are listed by, in the order a job passes through them. */
export const JOB_STATES = ["scheduled", "queued", "running", "succeeded", "failed", "cancelled"] as const;
export type JobStateName = (typeof JOB_STATES)[number];

/** "JOB_STATE_FAILED" → "failed". */
export function stateName(wire: string | undefined): string {
  return (wire ?? "").replace(/^JOB_STATE_/, "").toLowerCase();
}

/** "failed" → "JOB_STATE_FAILED", as ListJobs takes it. */
export function wireState(state: JobStateName): string {
  return `JOB_STATE_${state.toUpperCase()}`;
}

/** A job's last error in one line: "TimeoutError: took 30 s (retryable)". */
export function errorLine(e: JobJson["lastError"]): string {
  if (!e) return "";
  return `${e.type ? `${e.type}: ` : ""}${e.message ?? ""}${e.retryable ? " (retryable)" : ""}`;
}
