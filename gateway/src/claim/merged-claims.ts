import type { LockedVerdict, Store } from "../store/store.js";
import type { ClaimedJob } from "../store/types.js";

/** The same for every ordering of the same queues: polls with one key can share a claim statement. */
export const queueSetKey = (queues: readonly string[]): string => [...queues].sort().join("\u0000");

/** One poll's ask for jobs of queues claimed merged with other polls (see claimsAlone). */
export interface MergedAsk {
  queues: readonly string[];
  blockedFlowKeys: readonly string[];
  limit: number;
  leaseMs: number;
  workerId: string;
}

/** One poll's share of a merged claim: its jobs, and the queues declined for it. */
export interface MergedAnswer {
  jobs: ClaimedJob[];
  verdicts: readonly LockedVerdict[];
}

interface Waiting {
  ask: MergedAsk;
  resolve: (answer: MergedAnswer) => void;
  reject: (err: unknown) => void;
}

/**
 * Merges the claims of polls that reach this gateway together (within one turn of the event loop) into
 * one statement per set of queues, as settles are merged: many workers, or a worker with several Claim
 * streams, then cost Postgres one claim where they cost one each. Each poll still gets only jobs of its
 * own queues, at most its limit, with its own lease and worker id (see taskq.jobs_claim).
 */
export class MergedClaims {
  #waiting = new Map<string, Waiting[]>();
  #scheduled = false;

  constructor(private readonly store: Store) {}

  claim(ask: MergedAsk): Promise<MergedAnswer> {
    return new Promise((resolve, reject) => {
      // Same queues and same skipped flow keys: one statement can answer them all.
      const key = `${queueSetKey(ask.queues)}\u0001${[...ask.blockedFlowKeys].sort().join("\u0000")}`;
      const group = this.#waiting.get(key);
      if (group) group.push({ ask, resolve, reject });
      else this.#waiting.set(key, [{ ask, resolve, reject }]);
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const groups = [...this.#waiting.values()];
    // A new map, not clear(): V8's Map.prototype.clear leaves the entries in the old table (for
    // iterators still walking it). Once that table was promoted, it kept every poll's ask and answer reachable to the young-generation collector until the next full collection: most of
    // what each scavenge kept in a drain.
    this.#waiting = new Map();
    for (const group of groups) void this.#run(group);
  }

  async #run(group: Waiting[]): Promise<void> {
    const first = group[0];
    if (!first) return;
    const polls = {
      queues: first.ask.queues,
      blockedFlowKeys: first.ask.blockedFlowKeys,
      polls: group.map((w) => w.ask),
    };
    try {
      const claimed = await this.store.jobsClaimMany(polls);
      for (const [i, w] of group.entries())
        w.resolve({ jobs: claimed.jobs[i] ?? [], verdicts: claimed.verdicts[i] ?? [] });
    } catch (err) {
      for (const w of group) w.reject(err);
    }
  }
}
