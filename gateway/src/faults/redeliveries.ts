// Why each redelivered attempt ran out its lease, from the workers' logs: the figure that tells a
// scenario's expected redeliveries (the killed held them) from unexpected ones (a live worker lost one).
import type { StoredJob, WorkerEvent } from "./oracle.js";

export interface RedeliveryCauses {
  /** Claimed by a worker that was killed or stopped, never completed. */
  heldByVictim: number;
  /** Completed by a victim whose settle never got through. */
  completedByVictim: number;
  /** Claimed by a worker the scenario did not harm, which never completed it (its lease was lost first). */
  liveHeld: number;
  /** Completed by a worker the scenario did not harm, whose settle never got through in time. */
  liveCompleted: number;
  /** Handed out by the gateway but never reached a handler (in flight when its worker died). */
  neverReceived: number;
}

/** Counts, over every attempt before a job's stored one, why it did not settle. */
export function redeliveryCauses(
  events: readonly WorkerEvent[],
  stored: readonly StoredJob[],
  isVictim: (worker: string) => boolean,
): RedeliveryCauses {
  const byLease = new Map<string, WorkerEvent[]>();
  for (const e of events) {
    const key = `${e.job}/${e.attempt}`;
    byLease.set(key, [...(byLease.get(key) ?? []), e]);
  }
  const causes: RedeliveryCauses = {
    heldByVictim: 0,
    completedByVictim: 0,
    liveHeld: 0,
    liveCompleted: 0,
    neverReceived: 0,
  };
  for (const job of stored) {
    for (let attempt = 1; attempt < job.attempt; attempt++) {
      const seen = byLease.get(`${job.job}/${attempt}`) ?? [];
      const first = seen[0];
      if (!first) causes.neverReceived++;
      else {
        const completed = seen.some((e) => e.kind === "completed");
        if (isVictim(first.worker)) causes[completed ? "completedByVictim" : "heldByVictim"]++;
        else causes[completed ? "liveCompleted" : "liveHeld"]++;
      }
    }
  }
  return causes;
}
