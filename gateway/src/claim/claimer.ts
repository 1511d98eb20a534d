import type { Store } from "../store/store.js";
import type { ClaimedJob } from "../store/types.js";
import type { Waiters } from "./waiters.js";

/** One validated poll. */
export interface Poll {
  queues: string[];
  maxJobs: number;
  /** 0 answers at once. */
  maxWaitMs: number;
  workerId: string;
  leaseMs: number;
}

export interface PollResult {
  jobs: ClaimedJob[];
}

/**
 * Answers polls: claims what is ready in one batched statement, or parks the poll until a job becomes
 * ready on one of its queues (a notification), the wait runs out, or the caller goes away.
 */
export class Claimer {
  constructor(
    private readonly store: Store,
    private readonly waiters: Waiters,
  ) {}

  async poll(p: Poll, signal: AbortSignal): Promise<PollResult> {
    const deadline = Date.now() + p.maxWaitMs;
    for (;;) {
      const armed = this.waiters.arm(p.queues);
      try {
        const jobs = await this.store.jobsClaim({
          queues: p.queues,
          limit: p.maxJobs,
          leaseMs: p.leaseMs,
          workerId: p.workerId,
        });
        if (jobs.length > 0 || signal.aborted || Date.now() >= deadline) return { jobs };
        await armed.wait(deadline, signal);
      } finally {
        armed.disarm();
      }
      if (signal.aborted) return { jobs: [] };
    }
  }
}
