import type { FlowKeyGate } from "../flow/flow-keys.js";
import type { Profiles } from "../flow/profiles.js";
import type { ThrottledTally } from "../flow/throttled-tally.js";
import type { Verdict } from "../flow/verdict.js";
import type { Metrics } from "../metrics.js";
import type { QueueSettings } from "../store/queue-store.js";
import type { Store } from "../store/store.js";
import type { ClaimedJob, EnqueuedJob, NewJob, Settlement, SettleOutcome } from "../store/types.js";
import { claimFoundDrained, type DrainedQueues } from "./drained.js";
import type { GatedClaim } from "./gated-claim.js";
import { claimsAlone, lockedVerdict } from "./gates.js";
import { type Handed, HandOff, type PollWaiters } from "./hand-off.js";
import { MergedClaims } from "./merged-claims.js";

/** One validated poll. */
export interface Poll {
  queues: string[];
  maxJobs: number;
  /** 0 answers at once. */
  maxWaitMs: number;
  workerId: string;
  leaseMs: number;
  /**
   * Of maxJobs, how many the worker starts at once (its free handler slots); the rest would wait in its
   * buffer. Unset: all of them (the worker does not say). Caps the jobs of queues with a gate that
   * counts claimed jobs (see claimsAlone), which a buffered job would hold from other workers.
   */
  freeSlots?: number;
  /** Applied before the poll claims; a poll that carries any is never parked. */
  settlements?: readonly Settlement[];
}

export interface PollResult {
  jobs: ClaimedJob[];
  /** One per queue a gate declined. */
  verdicts: Verdict[];
  /** One per settlement of the poll, in order. */
  settled?: SettleOutcome[];
}

/** One claim round: a poll's result, and whether a flow key sent jobs back (others may be behind). */
interface Round extends PollResult {
  sentBack: boolean;
  /** A gated queue was not claimed from for want of a free slot: the worker polls again when one frees. */
  slotless: boolean;
  settled: SettleOutcome[];
  /** It found the poll's queues drained (claimFoundDrained). */
  drained: boolean;
}

/**
 * Answers polls, through the gates in the order claim/gates.ts lists. Most queues are claimed in one
 * statement, merged with the claims of other polls that arrive together (MergedClaims); a queue with a
 * Redis gate, a cap or a breaker is claimed poll by poll (GatedClaim, see claimsAlone). Either way
 * taskq.jobs_claim decides pause, breaker and max_running. A poll that gets neither jobs nor verdicts is parked until
 * a job becomes ready on one of its queues, the wait runs out, or the caller goes away; an enqueue
 * through this gateway claims for it in its own statement instead (HandOff). A poll declined
 * only by throttles whose next slot comes within its max_wait is held until that slot and tried again
 * (see throttleSlotWithin); any other verdict is answered at once, so the worker can sleep that queue
 * for exactly retry_after. Settlements a poll carries are applied in its first claim statement (alone
 * only when a Redis gate declined each of its queues before Postgres); such a poll is answered at
 * once, never parked or held, so their results are not held back. A Claim stream whose last claim
 * found its queues drained parks its next poll before claiming, unless a job was announced ready there
 * since (DrainedQueues).
 */
export class Claimer {
  private readonly merged: MergedClaims;
  private readonly handOff: HandOff;

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
  }

  /**
   * Enqueues a batch. Polls parked here on its queues get their claim in the enqueue's own statement
   * and their answer with it (HandOff).
   */
  enqueue(batch: readonly NewJob[]): Promise<EnqueuedJob[]> {
    return this.handOff.enqueue(batch);
  }

  /** `drained`: what the poll's Claim stream learned from its earlier polls, kept up to date here. */
  async poll(p: Poll, signal: AbortSignal, drained?: DrainedQueues): Promise<PollResult> {
    const deadline = Date.now() + p.maxWaitMs;
    let lookAgain = MAX_FLOW_ROUNDS;
    let settlements = p.settlements ?? [];
    if (drained && settlements.length === 0 && p.maxWaitMs > 0) {
      const handed = await this.parkIfDrained(p, deadline, signal, drained);
      if (handed) return handed;
      if (signal.aborted) return { jobs: [], verdicts: [] };
    }
    // A wake this poll took and will not claim for goes to the next parked poll (Waiters.wake).
    let woken = false;
    for (;;) {
      // A parked poll offers itself to enqueues on this gateway (HandOff).
      const armed = this.waiters.arm(p.queues, p);
      try {
        // Taken before the claim, for a stream that keeps what its polls found (none for ClaimOnce).
        const stamp = drained ? this.waiters.stamp(p.queues) : 0;
        const started = performance.now();
        const round = await this.claimOnce(p, settlements);
        const { sentBack, settled, drained: found, slotless, ...claimed } = round;
        drained?.found(p.queues, found ? stamp : undefined);
        const res = settlements.length > 0 ? { ...claimed, settled } : claimed;
        const answerNow = settlements.length > 0 || slotless;
        settlements = [];
        const slotAt =
          res.jobs.length === 0 && !signal.aborted && !answerNow
            ? throttleSlotWithin(res.verdicts, deadline)
            : null;
        this.count(res, started, slotAt === null);
        woken = false;
        // A full answer may have left more ready: as many parked polls again look (Waiters.wake).
        if (res.jobs.length >= p.maxJobs) this.wakeParked(p.queues);
        if (slotAt !== null) {
          await armed.wait(slotAt, signal);
          const handed = this.handed(armed.answer(), p.queues, drained);
          if (handed) return handed;
          continue;
        }
        if (res.jobs.length > 0 || res.verdicts.length > 0 || signal.aborted || answerNow) return res;
        // Jobs a flow key sent back leave others ready behind them: look again now, skipping that key.
        if (sentBack && lookAgain-- > 0) continue;
        if (Date.now() >= deadline) return res;
        await armed.wait(await this.parkUntil(p.queues, deadline), signal);
        const handed = this.handed(armed.answer(), p.queues, drained);
        if (handed) return handed;
        woken = armed.woken();
      } finally {
        armed.disarm();
      }
      if (signal.aborted) {
        if (woken) this.wakeParked(p.queues);
        return { jobs: [], verdicts: [] };
      }
    }
  }

  /** Wakes the next polls parked on `queues` (Waiters.wake): for more jobs, or for a wake passed on. */
  private wakeParked(queues: readonly string[]): void {
    for (const q of queues) this.waiters.wake(q);
  }

  /**
   * Parks a poll whose stream's last claim found its queues drained, if no job was announced ready
   * there since: an enqueue's answer to it, or undefined once woken, due or aborted (it claims then).
   */
  private async parkIfDrained(
    p: Poll,
    deadline: number,
    signal: AbortSignal,
    drained: DrainedQueues,
  ): Promise<PollResult | undefined> {
    const armed = this.waiters.arm(p.queues, p);
    try {
      // Read once armed: an announcement from here on wakes it, one before changed the stamp.
      if (!drained.holds(p.queues, this.waiters.stamp(p.queues))) return undefined;
      await armed.wait(await this.parkUntil(p.queues, deadline), signal);
      const handed = this.handed(armed.answer(), p.queues, drained);
      // Woken, but going away before it claims: the wake goes to the next parked poll.
      if (!handed && signal.aborted && armed.woken()) this.wakeParked(p.queues);
      return handed;
    } finally {
      armed.disarm();
    }
  }

  /**
   * An enqueue's answer to a parked poll, counted, and what it says of the queues' being drained;
   * undefined when it carries nothing (look again).
   */
  private handed(
    h: Handed | undefined,
    queues: readonly string[],
    drained: DrainedQueues | undefined,
  ): PollResult | undefined {
    if (!h) return undefined;
    drained?.found(queues, h.drainedStamp);
    this.count(h.result, h.startedMs, true);
    return h.result.jobs.length > 0 || h.result.verdicts.length > 0 ? h.result : undefined;
  }

  /**
   * How long a poll that found nothing parks. An on_idle_transition queue skips the NOTIFY when it
   * already had a ready job, and that job may be the one another worker is claiming right then; the
   * newer job then wakes nobody. Such polls look again every IDLE_TRANSITION_RECHECK_MS instead.
   */
  private async parkUntil(queues: readonly string[], deadline: number): Promise<number> {
    const settings = await this.profiles.queueSettings(queues);
    const quiet = [...settings.values()].some((s) => s?.notify_mode === "on_idle_transition");
    return quiet ? Math.min(deadline, Date.now() + IDLE_TRANSITION_RECHECK_MS) : deadline;
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

  private async claimOnce(p: Poll, settlements: readonly Settlement[]): Promise<Round> {
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
    const jobs: ClaimedJob[] = [];
    const verdicts: Verdict[] = [];
    let sentBack = false;
    // Settled in the first claim statement: the merged one, else the first queue claimed alone that gets
    // as far as Postgres (or alone, last, when a gate declined every such queue before).
    let settled: SettleOutcome[] = [];
    let unsettled = merged.length === 0 ? settlements : [];
    // A claim whose jobs a flow key sent back is repeated at once, skipping that key now, so a limited
    // key's backlog never holds back the jobs behind it (bounded: each round blocks at least one key).
    for (let round = 0; merged.length > 0 && round < MAX_FLOW_ROUNDS && jobs.length < p.maxJobs; round++) {
      const claimed = await this.merged.claim({
        queues: merged,
        limit: p.maxJobs - jobs.length,
        ...ask,
        blockedFlowKeys: round === 0 ? blockedFlowKeys : this.flowKeys.blockedKeys(),
        settlements: round === 0 ? settlements : [],
      });
      if (round === 0) {
        settled = claimed.settled;
        for (const v of claimed.verdicts) verdicts.push(lockedVerdict(v, this.gated.timings));
      }
      if (claimed.jobs.length === 0) break;
      const admitted = await this.flowKeys.admit(claimed.jobs);
      jobs.push(...admitted.jobs);
      if (admitted.sentBack === 0) break;
      sentBack = true;
    }
    // These queues' gates count claimed jobs: they get only the free slots, and come first in the
    // answer, so the worker starts them at once rather than buffering them.
    const gatedJobs: ClaimedJob[] = [];
    let slotless = false;
    // Random order, so no such queue of a poll is always last in line.
    for (const [q, s] of shuffled(alone)) {
      const room = p.maxJobs - jobs.length - gatedJobs.length;
      if (room <= 0) break;
      const want = Math.min(room, (p.freeSlots ?? p.maxJobs) - gatedJobs.length);
      if (want <= 0) {
        slotless = true;
        break;
      }
      const r = await this.gated.claim(q, s, { ...ask, want, settlements: unsettled });
      if (r.settled) [settled, unsettled] = [r.settled, []];
      gatedJobs.push(...r.jobs);
      if (r.verdict) verdicts.push(r.verdict);
      if (r.sentBack > 0) sentBack = true;
    }
    jobs.unshift(...gatedJobs);
    if (unsettled.length > 0) settled = await this.store.jobsSettle(unsettled);
    if (jobs.length === 0 && this.flowKeys.blockedKeys().length > 0) {
      const declined = new Set(verdicts.map((v) => v.queue));
      verdicts.push(...(await this.flowKeys.verdicts(p.queues.filter((q) => !declined.has(q)))));
    }
    const drained = await claimFoundDrained(this.profiles, {
      queues: p.queues,
      asked: p.maxJobs,
      got: jobs.length,
      verdicts: verdicts.length,
      sentBack,
      skippedFlowKeys: blockedFlowKeys,
    });
    return { jobs, verdicts, sentBack, settled, drained, slotless };
  }
}

/** How often a poll parked on an on_idle_transition queue looks again without a notification, ms. */
export const IDLE_TRANSITION_RECHECK_MS = 1000;

/**
 * When a poll declined only by THROTTLE should look again: a little before the soonest slot (the
 * limiter admits a take up to a few ms early for the slot's own time, so a held poll lands exactly on
 * it), or null when there is another verdict or the slot comes after the poll's deadline. A worker
 * told retry_after instead arrives a few ms late each time, and a backlogged throttle loses a share of
 * its rate to that.
 */
export function throttleSlotWithin(verdicts: readonly Verdict[], deadline: number): number | null {
  if (verdicts.length === 0 || verdicts.some((v) => v.reason !== "THROTTLE")) return null;
  const soonest = Math.min(...verdicts.map((v) => v.retryAfterMs));
  const now = Date.now();
  if (now + soonest >= deadline) return null;
  return now + Math.max(1, soonest - THROTTLE_SLOT_LEAD_MS);
}

/** How much before a slot a held poll looks again, ms (within the limiter's early window). */
const THROTTLE_SLOT_LEAD_MS = 5;

/** Claim rounds per poll when flow keys send jobs back. */
const MAX_FLOW_ROUNDS = 4;

function shuffled<T>(xs: T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
