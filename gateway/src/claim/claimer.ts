import type { Profiles } from "../flow/profiles.js";
import type { FlowKeyGate } from "../gates/flow-key.js";
import { claimsAlone } from "../gates/gates.js";
import { type Lessee, lockedVerdict } from "../gates/locked.js";
import type { Verdict } from "../gates/verdict.js";
import type { Metrics } from "../metrics.js";
import type { QueueSettings } from "../store/queue-store.js";
import type { Store } from "../store/store.js";
import type { ClaimedJob, EnqueuedJob, NewJob, Settlement } from "../store/types.js";
import { claimFoundDrained, type DrainedQueues } from "./drained.js";
import type { GatedClaim } from "./gated-claim.js";
import { HandOff, type PollWaiters } from "./hand-off.js";
import { MergedClaims } from "./merged-claims.js";
import {
  type LoopParts,
  MAX_FLOW_ROUNDS,
  type Poll,
  type PollResult,
  type Round,
  runPoll,
} from "./poll-loop.js";
import type { ThrottledTally } from "./throttled-tally.js";

/**
 * Answers polls and takes enqueues for the polls parked here. A poll's life (armed, claiming, held,
 * parked, answered) is PollLoop's; a claim round is `claimOnce`: queues without a gate that counts
 * claimed jobs are claimed in one statement merged with other polls' (MergedClaims), the others one
 * by one (GatedClaim, see claimsAlone), in the order gates/gates.ts lists.
 */
export class Claimer {
  private readonly merged: MergedClaims;
  private readonly handOff: HandOff;
  private readonly loopParts: LoopParts;

  constructor(
    private readonly store: Store,
    private readonly waiters: PollWaiters,
    private readonly profiles: Profiles,
    private readonly gated: GatedClaim,
    private readonly flowKeys: FlowKeyGate,
    private readonly metrics?: Metrics,
    private readonly tally?: ThrottledTally,
  ) {
    this.merged = new MergedClaims(store);
    this.handOff = new HandOff(store, waiters, profiles, gated.timings, flowKeys);
    this.loopParts = {
      waiters,
      claim: (p, settlements) => this.claimOnce(p, settlements),
      parkUntil: (queues, deadline) => this.parkUntil(queues, deadline),
      count: (res, started, answered) => this.count(res, started, answered),
    };
  }

  /**
   * Enqueues a batch. Polls parked here on its queues get their claim in the enqueue's own statement
   * and their answer with it (HandOff).
   */
  enqueue(batch: readonly NewJob[]): Promise<EnqueuedJob[]> {
    return this.handOff.enqueue(batch);
  }

  /** Answers a poll (PollLoop); `drained`: what its Claim stream learned from its earlier polls. */
  poll(p: Poll, signal: AbortSignal, drained?: DrainedQueues): Promise<PollResult> {
    return runPoll(this.loopParts, p, signal, drained);
  }

  /**
   * How long a poll that found nothing parks. An on_idle_transition queue skips the NOTIFY when it
   * already had a ready job, and that job may be the one another worker is claiming right then; the
   * newer job then wakes nobody. Such polls look again every IDLE_TRANSITION_RECHECK_MS instead.
   */
  private async parkUntil(queues: readonly string[], deadline: number): Promise<number> {
    const settings = await this.profiles.queueSettings(queues);
    const quiet = [...settings.values()].some((s) => s?.notify_mode === "on_idle_transition");
    return quiet ? Math.min(deadline, this.waiters.timers.now() + IDLE_TRANSITION_RECHECK_MS) : deadline;
  }

  /** Counts a claim round; its verdicts only when they are answered (not when the poll is held). */
  private count(res: PollResult, started: number, answered: boolean): void {
    if (answered) this.tally?.add(res.verdicts);
    const m = this.metrics;
    if (!m) return;
    m.claimSeconds.observe((performance.now() - started) / 1000);
    if (res.jobs.length > 0) {
      // One counter update per queue, not per job.
      const perQueue = new Map<string, number>();
      for (const j of res.jobs) perQueue.set(j.queue, (perQueue.get(j.queue) ?? 0) + 1);
      for (const [queue, n] of perQueue) m.claimed.inc({ queue }, n);
    }
    if (answered) for (const v of res.verdicts) m.throttled.inc({ queue: v.queue, reason: v.reason });
  }

  /**
   * One claim round. The poll's settlements are applied first, in a statement of their own: a job
   * settled back to ready may be claimed again, and a capped queue's room counts the jobs just ended.
   */
  private async claimOnce(p: Poll, settlements: readonly Settlement[]): Promise<Round> {
    const settled = settlements.length > 0 ? await this.store.jobsSettle(settlements) : [];
    const settings = await this.profiles.queueSettings(p.queues);
    const merged: string[] = [];
    const alone: [string, QueueSettings][] = [];
    for (const q of p.queues) {
      const s = settings.get(q) ?? null;
      if (claimsAlone(s)) alone.push([q, s]);
      else merged.push(q);
    }
    const blockedFlowKeys = this.flowKeys.blockedKeys();
    const ask = { leaseMs: p.leaseMs, workerId: p.workerId, blockedFlowKeys };
    const m = await this.claimMerged(p, merged, ask);
    const a = alone.length > 0 ? await this.claimAlone(p, alone, ask, m.jobs.length) : NOTHING_ALONE;
    // The alone queues' jobs come first in the answer, so the worker starts them at once rather than
    // buffering them: their gates count claimed jobs.
    const jobs = a.jobs.length > 0 ? [...a.jobs, ...m.jobs] : m.jobs;
    const verdicts = a.verdicts.length > 0 ? [...m.verdicts, ...a.verdicts] : m.verdicts;
    if (jobs.length === 0 && this.flowKeys.blockedKeys().length > 0) {
      const declined = new Set(verdicts.map((v) => v.queue));
      verdicts.push(...(await this.flowKeys.verdicts(p.queues.filter((q) => !declined.has(q)))));
    }
    const sentBack = m.sentBack || a.sentBack;
    const drained = await claimFoundDrained(this.profiles, {
      queues: p.queues,
      asked: p.maxJobs,
      got: jobs.length,
      verdicts: verdicts.length,
      sentBack,
      skippedFlowKeys: blockedFlowKeys,
    });
    return { jobs, verdicts, sentBack, settled, drained, slotless: a.slotless };
  }

  /**
   * The queues without a gate that counts claimed jobs, in one statement merged with other polls'
   * (MergedClaims). A claim whose jobs a flow key sent back is repeated at once, skipping that key now,
   * so a limited key's backlog never holds back the jobs behind it (bounded: each round blocks at least
   * one key).
   */
  private async claimMerged(p: Poll, queues: string[], ask: Lessee): Promise<Claimed> {
    const out: Claimed = { jobs: [], verdicts: [], sentBack: false };
    for (
      let round = 0;
      queues.length > 0 && round < MAX_FLOW_ROUNDS && out.jobs.length < p.maxJobs;
      round++
    ) {
      const claimed = await this.merged.claim({
        queues,
        limit: p.maxJobs - out.jobs.length,
        ...ask,
        blockedFlowKeys: round === 0 ? ask.blockedFlowKeys : this.flowKeys.blockedKeys(),
      });
      if (round === 0)
        for (const v of claimed.verdicts) out.verdicts.push(lockedVerdict(v, this.gated.timings));
      if (claimed.jobs.length === 0) break;
      const admitted = await this.flowKeys.admit(claimed.jobs);
      out.jobs.push(...admitted.jobs);
      if (admitted.sentBack === 0) break;
      out.sentBack = true;
    }
    return out;
  }

  /**
   * The queues whose gates count claimed jobs, one by one (GatedClaim) in random order, so none of a
   * poll's is always last in line. They get only the poll's free slots: `slotless` when one was left
   * out for want of a slot (the worker polls again when one frees).
   */
  private async claimAlone(
    p: Poll,
    queues: [string, QueueSettings][],
    ask: Lessee,
    taken: number,
  ): Promise<Claimed & { slotless: boolean }> {
    const out = { jobs: [] as ClaimedJob[], verdicts: [] as Verdict[], sentBack: false, slotless: false };
    for (const [q, s] of shuffled(queues)) {
      const room = p.maxJobs - taken - out.jobs.length;
      if (room <= 0) break;
      const want = Math.min(room, (p.freeSlots ?? p.maxJobs) - out.jobs.length);
      if (want <= 0) {
        out.slotless = true;
        break;
      }
      const r = await this.gated.claim(q, s, { ...ask, want });
      out.jobs.push(...r.jobs);
      if (r.verdict) out.verdicts.push(r.verdict);
      if (r.sentBack > 0) out.sentBack = true;
    }
    return out;
  }
}

/** A round without queues claimed alone (the usual poll): nothing to add, and never written to. */
const NOTHING_ALONE: Readonly<Claimed & { slotless: boolean }> = Object.freeze({
  jobs: [],
  verdicts: [],
  sentBack: false,
  slotless: false,
});

/** What a part of a claim round claimed. */
interface Claimed {
  jobs: ClaimedJob[];
  verdicts: Verdict[];
  /** A flow key sent jobs back. */
  sentBack: boolean;
}

/** How often a poll parked on an on_idle_transition queue looks again without a notification, ms. */
export const IDLE_TRANSITION_RECHECK_MS = 1000;

function shuffled<T>(xs: T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
