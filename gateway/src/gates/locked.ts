import type { QueueSettings } from "../store/queue-store.js";
import type { LockedVerdict, Store } from "../store/store.js";
import type { ClaimedJob } from "../store/types.js";
import type { GateTimings } from "./gates.js";
import type { Verdict } from "./verdict.js";

/** Who a claim leases for. */
export interface Lessee {
  leaseMs: number;
  workerId: string;
  blockedFlowKeys: string[];
}

/**
 * Gates 1-3, pause, breaker and max_running: decided by taskq.jobs_claim under the queue's row lock,
 * in the statement that picks and leases the jobs, so a verb's change commits before any claim that
 * reads it. They share one file because they share that one statement; the SQL says gate by gate.
 */
export class LockedGates {
  constructor(
    private readonly store: Store,
    readonly timings: GateTimings,
  ) {}

  /** Gates 1-3 and the pick: up to `limit` jobs leased to `lessee`, or the verdict of the gate that declined. */
  async pick(queue: string, limit: number, lessee: Lessee): Promise<ClaimedJob[] | Verdict> {
    const res = await this.store.jobsClaimMany({
      queues: [queue],
      blockedFlowKeys: lessee.blockedFlowKeys,
      polls: [{ limit, leaseMs: lessee.leaseMs, workerId: lessee.workerId }],
    });
    const [locked] = res.verdicts[0] ?? [];
    return locked ? lockedVerdict(locked, this.timings) : (res.jobs[0] ?? []);
  }

  /** The verdict of gates 1-3 now, claiming nothing. */
  async verdictNow(queue: string): Promise<Verdict | null> {
    const res = await this.store.jobsClaimMany({
      queues: [queue],
      polls: [{ limit: 0, leaseMs: 0, workerId: "" }],
    });
    const [locked] = res.verdicts[0] ?? [];
    return locked ? lockedVerdict(locked, this.timings) : null;
  }
}

/** A verdict of gates 1-3 as answered to the worker: this gateway's retry where Postgres left it open. */
export function lockedVerdict(v: LockedVerdict, timings: GateTimings): Verdict {
  const retryAfterMs =
    v.retryAfterMs ?? (v.reason === "PAUSED" ? timings.pausedRetryMs : timings.maxRunningRetryMs);
  return { queue: v.queue, reason: v.reason, retryAfterMs };
}

/** A breaker that is not closed hands out one probe per cooldown: the Redis gates do not apply to it. */
export function probing(s: QueueSettings): boolean {
  return s.breaker !== null && s.breaker.state !== "closed";
}

/**
 * The cache says gate 1 or 3 may decline: its verdict is asked for before a Redis gate's is answered,
 * so a Redis gate never hides it, and no token is taken for a claim it declines.
 */
export function lockedMayDecline(s: QueueSettings): boolean {
  return s.paused || s.max_running !== null;
}
