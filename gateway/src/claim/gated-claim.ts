import { setTimeout as sleep } from "node:timers/promises";
import { ClaimRateGate } from "../gates/claim-rate.js";
import type { FlowKeyGate } from "../gates/flow-key.js";
import type { GateBeforeClaim, GatedResult, GateTimings, Taken } from "../gates/gates.js";
import { type Lessee, LockedGates, lockedMayDecline, probing } from "../gates/locked.js";
import { RampGate, rampStartWithin } from "../gates/ramp.js";
import { ThrottleGate } from "../gates/throttle.js";
import type { Verdict } from "../gates/verdict.js";
import { LIMITER_DOWN_RETRY_MS, LimiterUnavailableError } from "../limiter/fail-closed.js";
import type { Limiter } from "../limiter/limiter.js";
import type { QueueSettings } from "../store/queue-store.js";
import type { Store } from "../store/store.js";

export interface ClaimAsk extends Lessee {
  want: number;
}

/**
 * Claims from one queue for one poll (see claimsAlone), through the gates in the order gates/gates.ts
 * lists: the Redis gates (4-6) are taken first, each admitting at most what the one before it did;
 * then taskq.jobs_claim decides gates 1-3 and leases; then flow keys (7) meter the jobs it leased; last,
 * each Redis gate gets back what the claim did not use. A claim rate with room takes its tokens beside
 * the claim instead (ClaimRateGate.claimBeside).
 */
export class GatedClaim {
  private readonly locked: LockedGates;
  private readonly throttle: ThrottleGate;
  private readonly claimRate: ClaimRateGate;
  /** Gates 4-6, in their order. */
  private readonly beforeClaim: readonly GateBeforeClaim[];

  constructor(
    store: Store,
    limiter: Limiter,
    private readonly flowKeys: FlowKeyGate,
    readonly timings: GateTimings,
    private readonly clock: () => number = Date.now,
  ) {
    this.locked = new LockedGates(store, timings);
    this.throttle = new ThrottleGate(limiter, clock);
    this.claimRate = new ClaimRateGate(limiter, store);
    this.beforeClaim = [this.throttle, this.claimRate, new RampGate(limiter, clock)];
  }

  claim(queue: string, s: QueueSettings, ask: ClaimAsk): Promise<GatedResult> {
    return this.throttle.turn(queue, s, () => this.claimNow(queue, s, ask));
  }

  private async claimNow(queue: string, s: QueueSettings, ask: ClaimAsk): Promise<GatedResult> {
    if (probing(s)) return this.claimLocked(queue, 1, ask);
    const lockedFirst = lockedMayDecline(s);
    if (s.paused) {
      const v = await this.locked.verdictNow(queue);
      if (v) return declined(v);
    }
    if (this.besideRate(queue, s)) {
      const pick = () => this.locked.pick(queue, ask.want, ask);
      return this.claimRate.claimBeside(queue, s, ask.want, pick, (jobs) => this.flowKeys.admit(jobs));
    }
    const taken: Taken[] = [];
    let want = ask.want;
    for (const gate of this.beforeClaim) {
      const t = await takeOrDown(gate, queue, s, want);
      if (t === null) continue;
      if ("reason" in t) {
        await giveBack(taken, 0);
        return declined((lockedFirst ? await this.locked.verdictNow(queue) : null) ?? t);
      }
      taken.push(t);
      want = t.admitted;
    }
    // A slot taken a moment early is used at its own time, never before.
    const waitMs = Math.max(0, ...taken.map((t) => t.waitMs));
    if (waitMs > 0) await sleep(waitMs);
    const res = await this.claimLocked(queue, want, ask);
    // What was not used goes back: an empty queue spends no slot and no token.
    await giveBack(taken, res.jobs.length);
    return res;
  }

  /** A claim rate, alone of gates 4-6, with room at its last take here: taken beside the claim. */
  private besideRate(
    queue: string,
    s: QueueSettings,
  ): s is QueueSettings & { claim_rate_per_minute: number } {
    return (
      s.claim_rate_per_minute !== null &&
      !s.throttle &&
      rampStartWithin(s, this.clock()) === null &&
      this.claimRate.roomy(queue)
    );
  }

  /** Gates 1-3 and the pick in Postgres, then gate 7. */
  private async claimLocked(queue: string, limit: number, ask: ClaimAsk): Promise<GatedResult> {
    const picked = await this.locked.pick(queue, limit, ask);
    if (!Array.isArray(picked)) return declined(picked);
    if (picked.length === 0) return { jobs: [], verdict: null, sentBack: 0 };
    return { ...(await this.flowKeys.admit(picked)), verdict: null };
  }
}

function declined(verdict: Verdict): GatedResult {
  return { jobs: [], verdict, sentBack: 0 };
}

/** A gate's take; with its limiter unreachable, its verdict (fail closed). */
async function takeOrDown(
  gate: GateBeforeClaim,
  queue: string,
  s: QueueSettings,
  want: number,
): Promise<Taken | Verdict | null> {
  try {
    return await gate.take(queue, s, want);
  } catch (err) {
    if (!(err instanceof LimiterUnavailableError)) throw err;
    return { queue, reason: gate.reason, retryAfterMs: LIMITER_DOWN_RETRY_MS };
  }
}

function giveBack(taken: readonly Taken[], used: number): Promise<unknown> {
  return Promise.all(taken.map((t) => t.giveBack(used)));
}
