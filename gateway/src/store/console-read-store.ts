import type { Db } from "./db.js";
import { loadQueries } from "./queries.js";
import { fromDbError } from "./queue-store.js";
import type { FailureInfo, JobStateName } from "./types.js";

const q = loadQueries("console-reads.sql", [
  "JobsList",
  "JobsCount",
  "JobEventsList",
  "BreakerEventsList",
  "QueueActivity",
] as const);

/** A job as taskq.list_jobs returns it: no payload or result bytes. Times are ms since the epoch. */
export interface JobSummaryRow {
  /** bigint as text. */
  id: string;
  state: JobStateName;
  priority: number;
  attempt: number;
  max_attempts: number;
  flow_key: string | null;
  content_type: string;
  payload_bytes: number;
  enqueued_ms: number;
  run_ms: number;
  started_ms: number | null;
  finished_ms: number | null;
  outcome: string | null;
  last_error: FailureInfo | null;
  worker_id: string | null;
}

/** One row of taskq.list_job_events. */
export interface JobEventRow {
  id: string;
  event_type: string;
  data: Record<string, unknown>;
  created_ms: number;
}

/** One row of taskq.list_breaker_events: job_id for automatic transitions, actor for manual ones. */
export interface BreakerEventRow {
  event_type: string;
  job_id: string | null;
  actor: string | null;
  data: Record<string, unknown>;
  created_ms: number;
}

/** One minute of taskq.queue_activity; counts are bigint as text. */
export interface ActivityRow {
  minute_ms: number;
  claimed: string;
  succeeded: string;
  failed: string;
  cancelled: string;
  avg_run_ms: number | null;
  max_run_ms: number | null;
  throttled: Record<string, number>;
}

/** The console's reads: each one SQL function (sql/), which validates its arguments. */
export class ConsoleReadStore {
  constructor(private readonly db: Db) {}

  /** The queue's jobs in `state`, newest first; `beforeId` pages (ids below it); limit default 50. */
  /** The queue's jobs in `state` (every state when null), newest first. */
  jobsList(queue: string, state: JobStateName | null, limit: number | null, beforeId: bigint | null) {
    return this.call<JobSummaryRow>(q.JobsList, [queue, state, limit, beforeId?.toString() ?? null]);
  }

  async jobsCount(queue: string, state: JobStateName | null): Promise<bigint> {
    const [row] = await this.call<{ total: string }>(q.JobsCount, [queue, state]);
    return BigInt(row?.total ?? 0);
  }

  jobEvents(jobId: string): Promise<JobEventRow[]> {
    return this.call<JobEventRow>(q.JobEventsList, [jobId]);
  }

  breakerEvents(queue: string, limit: number | null): Promise<BreakerEventRow[]> {
    return this.call<BreakerEventRow>(q.BreakerEventsList, [queue, limit]);
  }

  /** Per minute of the last `minutes` (default 15), oldest first. */
  queueActivity(queue: string, minutes: number | null): Promise<ActivityRow[]> {
    return this.call<ActivityRow>(q.QueueActivity, [queue, minutes]);
  }

  private async call<R extends object>(sql: (typeof q)[keyof typeof q], params: unknown[]): Promise<R[]> {
    try {
      return await this.db.query<R>(sql, params);
    } catch (err) {
      throw fromDbError(err);
    }
  }
}
