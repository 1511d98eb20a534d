import type { Store } from "../store/store.js";
import type { ClaimedJob } from "../store/types.js";

/** One poll's ask for jobs of queues no gate applies to. */
export interface PlainAsk {
  queues: readonly string[];
  blockedFlowKeys: readonly string[];
  limit: number;
  leaseMs: number;
  workerId: string;
}

interface Waiting {
  ask: PlainAsk;
  resolve: (jobs: ClaimedJob[]) => void;
  reject: (err: unknown) => void;
}

/**
 * Merges the plain claims of polls that reach this gateway together (within one turn of the event loop)
 * into one statement per set of queues, as settles are merged: many workers, or a worker with several
 * Claim streams, then cost Postgres one claim where they cost one each. Each poll still gets only jobs
 * of its own queues, at most its limit, with its own lease and worker id (see taskq.jobs_claim).
 */
export class PlainClaims {
  readonly #waiting = new Map<string, Waiting[]>();
  #scheduled = false;

  constructor(private readonly store: Store) {}

  claim(ask: PlainAsk): Promise<ClaimedJob[]> {
    return new Promise((resolve, reject) => {
      // Same queues and same skipped flow keys: one statement can answer them all.
      const key = `${[...ask.queues].sort().join("\u0000")}\u0001${[...ask.blockedFlowKeys].sort().join("\u0000")}`;
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
    this.#waiting.clear();
    for (const group of groups) void this.#run(group);
  }

  async #run(group: Waiting[]): Promise<void> {
    const first = group[0];
    if (!first) return;
    try {
      const claimed = await this.store.jobsClaimMany({
        queues: first.ask.queues,
        blockedFlowKeys: first.ask.blockedFlowKeys,
        polls: group.map((w) => w.ask),
      });
      for (const [i, w] of group.entries()) w.resolve(claimed[i] ?? []);
    } catch (err) {
      for (const w of group) w.reject(err);
    }
  }
}
