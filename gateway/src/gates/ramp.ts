import type { Limiter } from "../limiter/limiter.js";
import type { QueueSettings } from "../store/queue-store.js";
import { type GateBeforeClaim, refunding, type Taken } from "./gates.js";
import type { Verdict } from "./verdict.js";

/**
 * Gate 6, slow-start: after a resume or a breaker close, a queue with ramp_seconds grows its effective
 * claim rate (here, in Redis) and max_running (gate 3, in taskq.jobs_claim) from near zero to full over
 * the window. Tokens the claim did not use are refunded.
 */
export class RampGate implements GateBeforeClaim {
  readonly reason = "RAMPING";

  constructor(
    private readonly limiter: Limiter,
    private readonly clock: () => number,
  ) {}

  async take(queue: string, s: QueueSettings, want: number): Promise<Taken | Verdict | null> {
    const rate = s.claim_rate_per_minute;
    const start = rampStartWithin(s, this.clock());
    if (rate === null || start === null || s.ramp_seconds === null) return null;
    const r = await this.limiter.rampTake(queue, start, s.ramp_seconds * 1000, rate, want);
    if (r.admitted === 0) return { queue, reason: "RAMPING", retryAfterMs: r.retryAfterMs };
    return refunding(r.admitted, (n) => this.limiter.rampRefund(queue, start, n));
  }
}

/** When the queue's ramp started (ms since epoch) while it lasts, null otherwise. */
export function rampStartWithin(s: QueueSettings, nowMs: number): number | null {
  if (s.ramp_seconds === null || s.ramp_started_at === null) return null;
  const start = Date.parse(s.ramp_started_at);
  return nowMs - start < s.ramp_seconds * 1000 ? start : null;
}
