import { setTimeout as sleep } from "node:timers/promises";
import type { FlowKeyGate } from "../flow/flow-keys.js";
import { rampStartWithin } from "../flow/ramp.js";
import { LocalThrottles, takeThrottleSlot } from "../flow/throttle-slot.js";
import type { Verdict } from "../flow/verdict.js";
import { LIMITER_DOWN_RETRY_MS, LimiterUnavailableError } from "../limiter/fail-closed.js";
import { type Limiter, queueRateKey, type RateTakeResult } from "../limiter/limiter.js";
import type { QueueSettings } from "../store/queue-store.js";
import type { Store } from "../store/store.js";
import { type ClaimedJob, leaseKeys } from "../store/types.js";
import { type GateTimings, lockedVerdict } from "./gates.js";

export interface ClaimAsk {
  want: number;
  leaseMs: number;
  workerId: string;
  blockedFlowKeys: string[];
}

/** Claimed jobs (gate 7 let through), or the verdict of the first gate that declined. */
export interface GatedResult {
  jobs: ClaimedJob[];
  verdict: Verdict | null;
  /** Jobs a flow key sent back: others may be ready behind them. */
  sentBack: number;
}

/**
 * Claims from one queue for one poll (see claimsAlone, and claim/gates.ts for the order): takes the
 * throttle slot, claim-rate and ramp tokens first (a claim rate with room: beside the claim, see
 * claimBesideRate), then claims through taskq.jobs_claim, which decides pause, breaker and max_running
 * under the row lock, and gives back what the claim did not use.
 */
export class GatedClaim {
  constructor(
    private readonly store: Store,
    private readonly limiter: Limiter,
    private readonly flowKeys: FlowKeyGate,
    readonly timings: GateTimings,
    private readonly clock: () => number = Date.now,
  ) {
    this.local = new LocalThrottles(clock);
  }

  /** One gateway's turn-taking and remembered refusals of its throttled queues. */
  private readonly local: LocalThrottles;

  /**
   * Queues whose last claim-rate take on this gateway admitted all it asked for with tokens to spare:
   * their next claim takes its tokens beside the claim statement instead of before it (see
   * claimBesideRate).
   */
  private readonly rateRoomy = new Set<string>();

  claim(queue: string, s: QueueSettings, ask: ClaimAsk): Promise<GatedResult> {
    // One claim at a time per throttled queue on this gateway: the slot admits one per interval anyway.
    return s.throttle
      ? this.local.serial(queue, () => this.claimNow(queue, s, ask))
      : this.claimNow(queue, s, ask);
  }

  private async claimNow(queue: string, s: QueueSettings, ask: ClaimAsk): Promise<GatedResult> {
    if (s.breaker !== null && s.breaker.state !== "closed") {
      // A breaker's probe is one job per cooldown: it skips the Redis gates.
      return this.claimLocked(queue, 1, ask);
    }
    // Gates 1-3 come first: with the queue paused or capped (as far as this gateway knows), a verdict
    // of theirs must not be hidden by a later gate's, and no token is taken for a claim they decline.
    const earlier = s.paused || s.max_running !== null ? () => this.lockedOnly(queue) : async () => null;
    if (s.paused) {
      const v = await earlier();
      if (v) return { jobs: [], verdict: v, sentBack: 0 };
    }
    const declined = async (v: Verdict): Promise<GatedResult> => ({
      jobs: [],
      verdict: (await earlier()) ?? v,
      sentBack: 0,
    });

    let want = ask.want;
    let throttleToken: string | null = null;
    let slotWaitMs = 0;
    let rateTaken = 0;
    let rampTaken = 0;
    const rate = s.claim_rate_per_minute;
    // The ramp meters the claim rate fleet-wide while it lasts (Postgres scales max_running).
    const rampStart = rate !== null ? rampStartWithin(s, this.clock()) : null;
    if (rate !== null && !s.throttle && rampStart === null && this.rateRoomy.has(queue))
      return this.claimBesideRate(queue, rate, s.claim_burst ?? 1, ask);
    const giveBack = async (used: number) => {
      if (throttleToken && used === 0) await this.limiter.throttleRefund(queue, throttleToken);
      if (rate !== null && rateTaken > used)
        await this.limiter.rateRefund(queueRateKey(queue), rate, rateTaken - used);
      if (rampStart !== null && rampTaken > used)
        await this.limiter.rampRefund(queue, rampStart, rampTaken - used);
    };
    let gate: Verdict["reason"] = "THROTTLE";
    try {
      // Gate 4, the throttle.
      if (s.throttle) {
        const t = await takeThrottleSlot(
          this.limiter,
          this.local,
          queue,
          s.throttle,
          s.throttle_version ?? 0,
        );
        if (!t.admitted) return declined({ queue, reason: "THROTTLE", retryAfterMs: t.retryAfterMs });
        throttleToken = t.token;
        slotWaitMs = t.waitMs;
        want = 1;
      }
      // Gate 5, the claim rate.
      gate = "RATE_LIMIT";
      if (rate !== null) {
        const r = await this.limiter.rateTake(queueRateKey(queue), rate, s.claim_burst ?? 1, want);
        this.noteRateTake(queue, want, r);
        if (r.admitted === 0) {
          await giveBack(0);
          return declined({ queue, reason: "RATE_LIMIT", retryAfterMs: r.retryAfterMs });
        }
        rateTaken = want = r.admitted;
      }
      // Gate 6, the ramp of the claim rate.
      gate = "RAMPING";
      if (rampStart !== null && rate !== null && s.ramp_seconds !== null) {
        const r = await this.limiter.rampTake(queue, rampStart, s.ramp_seconds * 1000, rate, want);
        if (r.admitted === 0) {
          await giveBack(0);
          return declined({ queue, reason: "RAMPING", retryAfterMs: r.retryAfterMs });
        }
        rampTaken = want = r.admitted;
        await giveBack(want);
        rateTaken = want;
      }
    } catch (err) {
      if (!(err instanceof LimiterUnavailableError)) throw err;
      await giveBack(0);
      return { jobs: [], verdict: { queue, reason: gate, retryAfterMs: LIMITER_DOWN_RETRY_MS }, sentBack: 0 };
    }

    // A slot taken a moment early is used at its own time, never before.
    if (slotWaitMs > 0) await sleep(slotWaitMs);
    const res = await this.claimLocked(queue, want, ask);
    // Refund what was not used: an empty queue spends no slot and no token.
    await giveBack(res.jobs.length);
    // Not awaited: the worker's jobs must not wait on Redis bookkeeping (a Redis that hangs would hold
    // them until its command timeout). A confirm that never lands leaves the slot spent when its
    // reservation lapses, which is what a confirm says anyway. The limiter counts the error.
    if (throttleToken && res.jobs.length > 0)
      this.limiter.throttleConfirm(queue, throttleToken).catch(() => {});
    return res;
  }

  /** Gates 1-3 and the pick in Postgres, then gate 7. */
  private async claimLocked(queue: string, limit: number, ask: ClaimAsk): Promise<GatedResult> {
    const res = await this.pickLocked(queue, limit, ask);
    if (res.verdict || res.jobs.length === 0) return res;
    return { ...(await this.flowKeys.admit(res.jobs)), verdict: null };
  }

  /** Gates 1-3 and the pick in Postgres; no flow key yet. */
  private async pickLocked(queue: string, limit: number, ask: ClaimAsk): Promise<GatedResult> {
    const res = await this.store.jobsClaimMany({
      queues: [queue],
      blockedFlowKeys: ask.blockedFlowKeys,
      polls: [{ limit, leaseMs: ask.leaseMs, workerId: ask.workerId }],
    });
    const [locked] = res.verdicts[0] ?? [];
    if (locked) return { jobs: [], verdict: lockedVerdict(locked, this.timings), sentBack: 0 };
    return { jobs: res.jobs[0] ?? [], verdict: null, sentBack: 0 };
  }

  /**
   * Gate 5 beside gates 1-3: the claim-rate take and the claim statement at once, for a queue whose
   * last take here admitted all it asked for with tokens to spare (rateRoomy). A rate that does not
   * bind then adds no Redis round trip to the poll. Only the jobs the take admitted are handed out
   * (the best first); the others go back untouched, attempt restored, as a flow key's do, and the
   * queue takes its tokens first again until a take leaves tokens over. Unused tokens are refunded, as
   * after a claim that takes first. The jobs' started_at is the claim's time, which precedes their
   * admission by the take's round trip.
   */
  private async claimBesideRate(
    queue: string,
    rate: number,
    burst: number,
    ask: ClaimAsk,
  ): Promise<GatedResult> {
    const key = queueRateKey(queue);
    // Settled either way, so neither promise is left rejected and unobserved.
    const [took, picked] = await Promise.allSettled([
      this.limiter.rateTake(key, rate, burst, ask.want),
      this.pickLocked(queue, ask.want, ask),
    ]);
    const admitted = took.status === "fulfilled" ? took.value.admitted : 0;
    if (picked.status === "rejected") {
      if (admitted > 0) await this.limiter.rateRefund(key, rate, admitted);
      throw picked.reason;
    }
    const { jobs, verdict } = picked.value;
    this.noteRateTake(queue, ask.want, took.status === "fulfilled" ? took.value : undefined);
    // Best first: the jobs a binding rate keeps are the ones a claim that took first would have got.
    const ranked = admitted < jobs.length ? [...jobs].sort((x, y) => y.priority - x.priority) : jobs;
    const extra = ranked.slice(admitted);
    if (extra.length > 0) await this.store.jobsUnclaim(leaseKeys(extra));
    if (took.status === "rejected" && !(took.reason instanceof LimiterUnavailableError)) throw took.reason;
    const res = verdict ? { jobs: [], sentBack: 0 } : await this.flowKeys.admit(ranked.slice(0, admitted));
    if (admitted > res.jobs.length) await this.limiter.rateRefund(key, rate, admitted - res.jobs.length);
    if (verdict || admitted > 0) return { ...res, verdict };
    // The rate admitted nothing (or could not be asked): declined as a claim that took first would be.
    const retryAfterMs = took.status === "fulfilled" ? took.value.retryAfterMs : LIMITER_DOWN_RETRY_MS;
    return { ...res, verdict: { queue, reason: "RATE_LIMIT", retryAfterMs } };
  }

  /**
   * Remembers whether a claim-rate take admitted all it asked for and left tokens over (see rateRoomy).
   * A take that emptied the bucket does not count: at a rate that binds, the next claim would otherwise
   * claim beside a take that admits nothing, and put it all back, every other poll.
   */
  private noteRateTake(queue: string, want: number, r: RateTakeResult | undefined): void {
    if (r && r.admitted >= want && r.retryAfterMs === 0) this.rateRoomy.add(queue);
    else this.rateRoomy.delete(queue);
  }

  /** The verdict of gates 1-3 now, claiming nothing. */
  private async lockedOnly(queue: string): Promise<Verdict | null> {
    const res = await this.store.jobsClaimMany({
      queues: [queue],
      polls: [{ limit: 0, leaseMs: 0, workerId: "" }],
    });
    const [locked] = res.verdicts[0] ?? [];
    return locked ? lockedVerdict(locked, this.timings) : null;
  }
}
