import { setTimeout as sleep } from "node:timers/promises";
import { LIMITER_DOWN_RETRY_MS, LimiterUnavailableError } from "../limiter/fail-closed.js";
import { type Limiter, queueRateKey } from "../limiter/limiter.js";
import type { QueueSettings, QueueStore } from "../store/queue-store.js";
import type { LockedVerdict, Store } from "../store/store.js";
import type { ClaimedJob } from "../store/types.js";
import type { FlowKeyGate } from "./flow-keys.js";
import { rampProgress } from "./ramp.js";
import { LocalThrottles, takeThrottleSlot } from "./throttle-slot.js";
import type { Verdict } from "./verdict.js";

export interface GateTimings {
  /** retry_after of a PAUSED verdict: how often a worker looks again, ms. */
  pausedRetryMs: number;
  /** retry_after of a MAX_RUNNING verdict: a slot frees when any job settles, so look again soon, ms. */
  maxRunningRetryMs: number;
}

export interface ClaimAsk {
  want: number;
  leaseMs: number;
  workerId: string;
  blockedFlowKeys: string[];
}

/**
 * Claims from one queue a gate applies to, evaluating the gates in SPEC order — pause, breaker,
 * max_running, throttle, claim rate, flow keys, ramp — and answering the first that declines with
 * a verdict. Tokens taken for claims that found no job are given back.
 */
export class GatedClaim {
  constructor(
    private readonly store: Store,
    private readonly queues: QueueStore,
    private readonly limiter: Limiter,
    private readonly flowKeys: FlowKeyGate,
    private readonly timings: GateTimings,
    private readonly clock: () => number = Date.now,
  ) {
    this.local = new LocalThrottles(clock);
  }

  /** One gateway's turn-taking and remembered refusals of its throttled queues. */
  private readonly local: LocalThrottles;

  claim(queue: string, s: QueueSettings, ask: ClaimAsk): Promise<ClaimedJob[] | Verdict> {
    // One claim at a time per throttled queue on this gateway: the slot admits one per interval anyway.
    return s.throttle
      ? this.local.serial(queue, () => this.claimNow(queue, s, ask))
      : this.claimNow(queue, s, ask);
  }

  private async claimNow(queue: string, s: QueueSettings, ask: ClaimAsk): Promise<ClaimedJob[] | Verdict> {
    if (s.paused) return { queue, reason: "PAUSED", retryAfterMs: this.timings.pausedRetryMs };
    const ramp = rampProgress(s, this.clock());
    const cap = s.max_running === null ? null : Math.max(1, Math.ceil(s.max_running * ramp));
    if (s.breaker !== null && s.breaker.state !== "closed") {
      // Gate 2: the breaker is decided in SQL under the queue's row lock (claim_queue), so it is exact
      // fleet-wide: BREAKER_OPEN with the remaining cooldown, BREAKER_PROBING while the probe is out,
      // or exactly one job, the probe (which skips the later rate gates: one job per cooldown).
      const res = await this.store.jobsClaimGated({
        queue,
        limit: 1,
        leaseMs: ask.leaseMs,
        workerId: ask.workerId,
        cap,
        agingSeconds: s.priority_aging_seconds,
        blockedFlowKeys: ask.blockedFlowKeys,
      });
      if (res.verdict) return this.locked(queue, res.verdict);
      if (res.capped)
        return {
          queue,
          reason: cap !== null && s.max_running !== null && cap < s.max_running ? "RAMPING" : "MAX_RUNNING",
          retryAfterMs: this.timings.maxRunningRetryMs,
        };
      return res.jobs.length > 0 ? await this.flowKeys.admit(res.jobs) : [];
    }
    const capVerdict = (): Verdict => ({
      queue,
      reason: cap !== null && s.max_running !== null && cap < s.max_running ? "RAMPING" : "MAX_RUNNING",
      retryAfterMs: this.timings.maxRunningRetryMs,
    });
    // A later gate's verdict must not hide a full max_running, which comes first.
    const declined = async (v: Verdict): Promise<Verdict> =>
      cap !== null && (await this.queues.queueRunning(queue)) >= cap ? capVerdict() : v;

    let want = ask.want;
    let throttleToken: string | null = null;
    let slotWaitMs = 0;
    let rateTaken = 0;
    let rampTaken = 0;
    const rate = s.claim_rate_per_minute;
    // The ramp meters the claim rate fleet-wide while it lasts (max_running is scaled above).
    const rampStart = ramp < 1 && rate !== null && s.ramp_started_at ? Date.parse(s.ramp_started_at) : null;
    const giveBack = async (used: number) => {
      if (throttleToken && used === 0) await this.limiter.throttleRefund(queue, throttleToken);
      if (rate !== null && rateTaken > used)
        await this.limiter.rateRefund(queueRateKey(queue), rate, rateTaken - used);
      if (rampStart !== null && rampTaken > used)
        await this.limiter.rampRefund(queue, rampStart, rampTaken - used);
    };
    let gate: Verdict["reason"] = "THROTTLE";
    try {
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
      gate = "RATE_LIMIT";
      if (rate !== null) {
        const r = await this.limiter.rateTake(queueRateKey(queue), rate, s.claim_burst ?? 1, want);
        if (r.admitted === 0) {
          await giveBack(0);
          return declined({ queue, reason: "RATE_LIMIT", retryAfterMs: r.retryAfterMs });
        }
        rateTaken = want = r.admitted;
      }
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
      return { queue, reason: gate, retryAfterMs: LIMITER_DOWN_RETRY_MS };
    }

    // A slot taken a moment early is used at its own time, never before.
    if (slotWaitMs > 0) await sleep(slotWaitMs);
    const res = await this.store.jobsClaimGated({
      queue,
      limit: want,
      leaseMs: ask.leaseMs,
      workerId: ask.workerId,
      cap,
      agingSeconds: s.priority_aging_seconds,
      blockedFlowKeys: ask.blockedFlowKeys,
    });
    const jobs = res.jobs.length > 0 ? await this.flowKeys.admit(res.jobs) : [];
    // Refund what was not used: an empty queue spends no slot and no token.
    await giveBack(jobs.length);
    // Not awaited: the worker's jobs must not wait on Redis bookkeeping (a Redis that hangs would hold
    // them until its command timeout). A confirm that never lands leaves the slot spent when its
    // reservation lapses, which is what a confirm says anyway. The limiter counts the error.
    if (throttleToken && jobs.length > 0) this.limiter.throttleConfirm(queue, throttleToken).catch(() => {});
    // Paused, or the breaker opened, after this gateway last read the settings: SQL declined, exactly.
    if (res.verdict) return this.locked(queue, res.verdict);
    return res.capped ? capVerdict() : jobs;
  }

  /** A verdict claim_queue decided under the row lock; PAUSED gets this gateway's retry. */
  private locked(queue: string, v: { reason: LockedVerdict; retryAfterMs: number }): Verdict {
    return v.reason === "PAUSED"
      ? { queue, reason: "PAUSED", retryAfterMs: this.timings.pausedRetryMs }
      : { queue, ...v };
  }
}
