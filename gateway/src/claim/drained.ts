import type { Profiles } from "../flow/profiles.js";
import { claimsAlone } from "../gates/gates.js";
import { queueSetKey } from "./merged-claims.js";

/**
 * What one Claim stream knows between its polls: that its last claim found its queues drained, and
 * the wake stamp (Waiters.stamp) taken before that claim began. While the stamp is unchanged, no job
 * has been announced ready there since, so the stream's next poll can park at once instead of running
 * a claim statement that would find nothing. A worker that runs each job it is handed and polls again
 * (the usual loop below full load) then costs Postgres no claim between its jobs, and its poll is
 * parked, where an enqueue can hand it the next one, for all of that time.
 */
export class DrainedQueues {
  #key: string | undefined;
  #stamp = 0;

  /** A claim of `queues` began at `stamp` and found them drained; undefined when it did not. */
  found(queues: readonly string[], stamp: number | undefined): void {
    this.#key = stamp === undefined ? undefined : queueSetKey(queues);
    this.#stamp = stamp ?? 0;
  }

  /** The last claim found these very queues drained, and `stamp` is still the one from before it. */
  holds(queues: readonly string[], stamp: number): boolean {
    return this.#key !== undefined && stamp === this.#stamp && this.#key === queueSetKey(queues);
  }
}

/** What one poll's claim (its own, or an enqueue's for it) asked for and got. */
export interface PollClaim {
  queues: readonly string[];
  asked: number;
  got: number;
  verdicts: number;
  /** A flow key sent jobs back after the claim. */
  sentBack: boolean;
  /** Flow keys the claim skipped. */
  skippedFlowKeys: readonly string[];
}

/**
 * Whether a poll's claim found every ready job of its queues, so that no other job is ready there
 * until one is announced: it got fewer jobs than it asked for (the pick ran out; polls merged in one
 * claim are handed jobs in turn), with no verdict and none sent back. Not when a flow key was skipped
 * (its jobs stay ready) or any flow limit exists (jobs a flow key sends back become ready again without
 * an announcement), nor for a queue claimed alone (its Redis gates decide how many it takes) or
 * notified only on its idle transition (a job enqueued behind a ready one is not announced).
 */
export async function claimFoundDrained(profiles: Profiles, c: PollClaim): Promise<boolean> {
  if (c.got >= c.asked || c.verdicts > 0 || c.sentBack || c.skippedFlowKeys.length > 0) return false;
  const settings = await profiles.queueSettings(c.queues);
  for (const q of c.queues) {
    const s = settings.get(q) ?? null;
    if (s?.notify_mode === "on_idle_transition" || claimsAlone(s)) return false;
  }
  return (await profiles.flowLimitsAll()).size === 0;
}
