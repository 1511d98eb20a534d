import type { AttemptOutcome, AttemptRecord, FailureInfo, JobRecord } from "./types.js";

/** A row of taskq.job_attempts, as JobAttempts reads it. */
export interface AttemptRow {
  attempt: number;
  worker_id: string | null;
  gateway: string | null;
  claimed_at: Date | null;
  finished_at: Date;
  outcome: AttemptOutcome;
  error: FailureInfo | null;
  duration_ms: number | null;
}

/**
 * A job's attempts, oldest first: the stored ones (each that did not succeed), then its current attempt
 * when it is running or succeeded. A success stores no row (the success path writes nothing more), so
 * the job's own row describes it: its worker, started_at and finished_at are that attempt's.
 */
export function jobAttempts(job: JobRecord, rows: readonly AttemptRow[]): AttemptRecord[] {
  const stored = rows.map(
    (r): AttemptRecord => ({
      attempt: r.attempt,
      workerId: r.worker_id,
      gateway: r.gateway,
      claimedAt: r.claimed_at,
      finishedAt: r.finished_at,
      outcome: r.outcome,
      error: r.error,
      durationMs: r.duration_ms,
    }),
  );
  const last = stored.at(-1)?.attempt ?? 0;
  if (job.attempt > last && (job.state === "running" || job.state === "succeeded")) {
    const running = job.state === "running";
    stored.push({
      attempt: job.attempt,
      workerId: job.workerId,
      gateway: null,
      claimedAt: job.startedAt,
      finishedAt: running ? null : job.finishedAt,
      outcome: running ? "running" : "succeeded",
      error: null,
      durationMs:
        running || !job.startedAt || !job.finishedAt
          ? null
          : job.finishedAt.getTime() - job.startedAt.getTime(),
    });
  }
  return stored;
}
