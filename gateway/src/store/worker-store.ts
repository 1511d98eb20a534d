import type { Db } from "./db.js";
import { loadQueries } from "./queries.js";
import { fromDbError } from "./queue-store.js";

const q = loadQueries("workers.sql", ["WorkersFlush", "WorkersList"] as const);

/** One worker as a gateway reports it (taskq.workers_flush). Times are ms since the epoch. */
export interface WorkerReport {
  worker_id: string;
  queues: string[];
  streams: number;
  max_jobs: number;
  concurrency: number | null;
  prefetch: number | null;
  last_poll_ms: number;
  /** Throttled verdicts answered in the last minute, by reason. */
  verdicts: Record<string, number>;
}

/** One row of taskq.list_workers. */
export interface WorkerRow extends WorkerReport {
  gateway_id: string;
  /** Running jobs leased to its worker id, fleet-wide. */
  held: number;
  refreshed_ms: number;
}

/** The worker records (taskq.workers), which each gateway writes and every gateway reads. */
export class WorkerStore {
  constructor(private readonly db: Db) {}

  /** Replaces this gateway's rows with `workers`, each lapsing `ttlMs` from now; prunes lapsed rows. */
  async workersFlush(gatewayId: string, workers: readonly WorkerReport[], ttlMs: number): Promise<void> {
    await this.db.query(q.WorkersFlush, [gatewayId, JSON.stringify(workers), ttlMs]);
  }

  /** Every worker connected to any gateway, by worker id then gateway. */
  async workersList(): Promise<WorkerRow[]> {
    try {
      return await this.db.query<WorkerRow>(q.WorkersList);
    } catch (err) {
      throw fromDbError(err);
    }
  }
}
