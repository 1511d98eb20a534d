import type { Db } from "./db.js";
import { loadQueries } from "./queries.js";
import { fromDbError } from "./queue-store.js";
import type { FailureInfo, JobStateName } from "./types.js";

const q = loadQueries("explain.sql", [
  "ExplainJob",
  "ExplainNextJob",
  "ExplainNextJobAged",
  "ExplainAhead",
  "ExplainQueue",
  "ExplainHeldBefore",
  "ExplainWorkerSlots",
] as const);

/** A job as explain reads it. Times are ms since the epoch. */
export interface ExplainedJobRow {
  id: string;
  queue: string;
  state: JobStateName;
  priority: number;
  flow_key: string | null;
  attempt: number;
  /** Attempts spent before its last redrive (taskq.redrive_failed). */
  attempt_floor: number;
  max_attempts: number;
  run_ms: number;
  expires_ms: number | null;
  started_ms: number | null;
  finished_ms: number | null;
  lease_deadline_ms: number | null;
  worker_id: string | null;
  outcome: string | null;
  last_error: FailureInfo | null;
}

/** The figures of a queue's Postgres gates and of who claims from it (queries/explain.sql). */
export interface QueueFactsRow {
  running: number;
  /** When the longest-running of them was claimed. */
  oldest_running_ms: number | null;
  /** max_running as the ramp scales it now; null without a cap. */
  cap: number | null;
  paused_by: { actor: string; at_ms: number } | null;
  breaker_opened: {
    event: string;
    actor: string | null;
    job_id: string | null;
    data: Record<string, unknown>;
    at_ms: number;
  } | null;
  workers: number;
  last_poll_ms: number | null;
  /** Jobs the workers polling it can hold at once: free slots asked for plus jobs held. */
  capacity: number;
  claims_5m: number;
  /** Average run time of its jobs finished in the last 5 minutes; null without any. */
  avg_run_ms: number | null;
  claims_since_ms: number;
}

/** Explain's reads: each one statement, nothing written, `now` explicit. */
export class ExplainStore {
  constructor(private readonly db: Db) {}

  async job(id: string): Promise<ExplainedJobRow | null> {
    const [row] = await this.call<ExplainedJobRow>(q.ExplainJob, [id]);
    return row ?? null;
  }

  /** The id of the job a claim of the queue would hand out next (else its first scheduled one). */
  async nextJob(queue: string, agingSeconds: number | null, nowMs: number): Promise<string | null> {
    const [row] =
      agingSeconds === null
        ? await this.call<{ id: string }>(q.ExplainNextJob, [queue, new Date(nowMs)])
        : await this.call<{ id: string }>(q.ExplainNextJobAged, [queue, new Date(nowMs), agingSeconds]);
    return row?.id ?? null;
  }

  /** Ready jobs a claim hands out before this one. */
  async ahead(job: ExplainedJobRow, agingSeconds: number | null, nowMs: number): Promise<number> {
    const [row] = await this.call<{ ahead: number }>(q.ExplainAhead, [
      job.queue,
      job.priority,
      new Date(job.run_ms),
      job.id,
      new Date(nowMs),
      agingSeconds,
    ]);
    return row?.ahead ?? 0;
  }

  async queue(queue: string, nowMs: number): Promise<QueueFactsRow> {
    const [row] = await this.call<QueueFactsRow>(q.ExplainQueue, [queue, new Date(nowMs)]);
    if (!row) throw new Error("explain: the queue's facts came back empty");
    return row;
  }

  /** Running jobs of `workerId` it claimed before this one (which an SDK worker starts first). */
  async heldBefore(workerId: string, job: ExplainedJobRow): Promise<number> {
    const [row] = await this.call<{ before: number }>(q.ExplainHeldBefore, [workerId, job.id]);
    return row?.before ?? 0;
  }

  /** The job slots the worker reported in its polls; null when it reported none. */
  async workerSlots(workerId: string, nowMs: number): Promise<number | null> {
    const [row] = await this.call<{ concurrency: number | null }>(q.ExplainWorkerSlots, [
      workerId,
      new Date(nowMs),
    ]);
    return row?.concurrency ?? null;
  }

  private async call<R extends object>(sql: (typeof q)[keyof typeof q], params: unknown[]): Promise<R[]> {
    try {
      return await this.db.query<R>(sql, params);
    } catch (err) {
      throw fromDbError(err);
    }
  }
}
