import type { Profiles } from "../flow/profiles.js";
import type { FlowKeyGate } from "../gates/flow-key.js";
import { claimsAlone, type GateTimings } from "../gates/gates.js";
import { lockedVerdict } from "../gates/locked.js";
import type { LockedVerdict, Store } from "../store/store.js";
import { type ClaimedJob, type EnqueuedJob, leaseKeys, type NewJob } from "../store/types.js";
import { claimFoundDrained } from "./drained.js";
import { queueSetKey } from "./merged-claims.js";
import type { Poll, PollResult } from "./poll-loop.js";
import type { Taken, Waiters } from "./waiters.js";

/** What an enqueue hands a parked poll: its claim's result, and when that claim began. */
export interface Handed {
  result: PollResult;
  startedMs: number;
  /** The wake stamp from before the claim, when it found the poll's queues drained (DrainedQueues). */
  drainedStamp?: number;
}

export type PollWaiters = Waiters<Poll, Handed>;

/**
 * Enqueues, handing the jobs to polls parked on this gateway in the enqueue's own statement
 * (taskq.jobs_enqueue_claim) where it can: a job then reaches its worker with the enqueue's answer,
 * not after a notification, a wake-up and a claim statement of the poll's own.
 *
 * Only polls whose every queue is claimed in one statement (no Redis gate, cap or breaker: claimsAlone)
 * are handed jobs, and the claim is taskq.jobs_claim itself, so every gate it decides holds as for any
 * claim. Polls of one set of queues share the statement (as MergedClaims merges them); others on the
 * batch's queues are left parked, and the enqueue's notification wakes them as before.
 */
export class HandOff {
  constructor(
    private readonly store: Store,
    private readonly waiters: PollWaiters,
    private readonly profiles: Profiles,
    private readonly timings: GateTimings,
    private readonly flowKeys: FlowKeyGate,
  ) {}

  async enqueue(batch: readonly NewJob[]): Promise<EnqueuedJob[]> {
    const ready = batch.filter(readyNow);
    // Polls of one set of queues (one claim statement), oldest first, until they can take every ready
    // job of the batch: the others stay parked, for the enqueue's notification to wake.
    let key: string | undefined;
    let room = 0;
    const group = this.waiters.take([...new Set(ready.map((j) => j.queue))], (offer) => {
      if (room >= ready.length) return "stop";
      key ??= queueSetKey(offer.queues);
      if (queueSetKey(offer.queues) !== key) return "skip";
      room += offer.maxJobs;
      return "take";
    });
    const [first] = group;
    if (!first) return this.store.jobsEnqueue(batch);
    const startedMs = performance.now();
    const blockedFlowKeys = this.flowKeys.blockedKeys();
    const stamp = this.waiters.stamp(first.offer.queues);
    let out: Awaited<ReturnType<Store["jobsEnqueueClaim"]>>;
    try {
      if (!(await this.claimedTogether(first.offer.queues))) return this.alone(batch, group);
      out = await this.store.jobsEnqueueClaim(batch, {
        queues: first.offer.queues,
        blockedFlowKeys,
        polls: group.map((t) => ({
          limit: t.offer.maxJobs,
          leaseMs: t.offer.leaseMs,
          workerId: t.offer.workerId,
        })),
      });
    } catch {
      // One transaction: nothing was enqueued. A claim's failure never fails an enqueue.
      return this.alone(batch, group);
    }
    await Promise.all(
      group.map((t, i) =>
        this.answer(t, out.claimed.jobs[i] ?? [], out.claimed.verdicts[i] ?? [], {
          startedMs,
          stamp,
          blockedFlowKeys,
        }),
      ),
    );
    return out.enqueued;
  }

  /** The batch enqueued on its own; its notification wakes the polls, parked again. */
  private alone(batch: readonly NewJob[], taken: readonly Taken<Poll, Handed>[]): Promise<EnqueuedJob[]> {
    for (const t of taken) t.giveBack();
    return this.store.jobsEnqueue(batch);
  }

  /**
   * Hands one poll its share. Jobs it cannot take (its caller went away, or metering them by flow key
   * failed) go back at once, and a poll given nothing looks for itself.
   */
  private async answer(
    t: Taken<Poll, Handed>,
    claimed: ClaimedJob[],
    locked: readonly LockedVerdict[],
    claim: { startedMs: number; stamp: number; blockedFlowKeys: readonly string[] },
  ): Promise<void> {
    let jobs = claimed;
    try {
      const admitted = await this.flowKeys.admit(claimed);
      jobs = admitted.jobs;
      const verdicts = locked.map((v) => lockedVerdict(v, this.timings));
      const drained = await claimFoundDrained(this.profiles, {
        queues: t.offer.queues,
        asked: t.offer.maxJobs,
        got: claimed.length,
        verdicts: verdicts.length,
        sentBack: admitted.sentBack > 0,
        skippedFlowKeys: claim.blockedFlowKeys,
      });
      const drainedStamp = drained ? claim.stamp : undefined;
      if (t.give({ result: { jobs, verdicts }, startedMs: claim.startedMs, drainedStamp })) return;
    } catch {
      t.giveBack();
    }
    if (jobs.length === 0) return;
    try {
      const queues = await this.store.jobsRelease(leaseKeys(jobs));
      await this.store.notifyQueues([...new Set(queues)]);
    } catch {
      // The enqueue stands; these jobs come back when their lease runs out, as any lost claim's.
    }
  }

  /** Whether each of these queues is claimed in the one statement (see claimsAlone). */
  private async claimedTogether(queues: readonly string[]): Promise<boolean> {
    const settings = await this.profiles.queueSettings(queues);
    return queues.every((q) => !claimsAlone(settings.get(q) ?? null));
  }
}

/** A job ready as soon as it is enqueued (not scheduled for later). */
const readyNow = (j: NewJob) => j.runAt === null && !(j.delayMs !== null && j.delayMs > 0);
