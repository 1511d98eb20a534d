import type {
  Limiter,
  RatePeek,
  RateTakeResult,
  ThrottlePeek,
  ThrottleTakeOptions,
  ThrottleTakeResult,
} from "../limiter/limiter.js";

/**
 * One limiter decision, as the limiter returned it (nowMs is the limiter's clock, whole ms; Redis TIME
 * for Redis; for an admitted throttle take, the slot's own time).
 */
export interface LimiterEvent {
  op: "throttleTake" | "throttleRefund" | "rateTake" | "rateRefund" | "rampTake" | "rampRefund";
  /** The queue (throttle, ramp) or the rate key (`queue:<name>`, `flow:<key>`). */
  key: string;
  /** Admitted (1/0 for the throttle), or given back (refunds). */
  n: number;
  /** The limiter's clock at the decision; for refunds, this process's clock. */
  nowMs: number;
  retryAfterMs: number;
}

/**
 * A limiter that records every decision of the one it wraps into `events` (several gateways may share
 * one list): instrumentation only, every call and result passes through unchanged. A call that fails
 * records nothing.
 */
export class RecordingLimiter implements Limiter {
  constructor(
    private readonly inner: Limiter,
    readonly events: LimiterEvent[] = [],
  ) {}

  async throttleTake(
    queue: string,
    intervalMs: number,
    options?: ThrottleTakeOptions,
  ): Promise<ThrottleTakeResult> {
    const r = await this.inner.throttleTake(queue, intervalMs, options);
    // A take that met another's reservation decided nothing: it asks again.
    if (!r.admitted && r.pending) return r;
    this.events.push({
      op: "throttleTake",
      key: queue,
      n: r.admitted ? 1 : 0,
      nowMs: r.nowMs,
      retryAfterMs: r.admitted ? 0 : r.retryAfterMs,
    });
    return r;
  }

  /** Peeks decide nothing: passed through, not recorded. */
  throttlePeek(queue: string, intervalMs: number, options?: ThrottleTakeOptions): Promise<ThrottlePeek> {
    return this.inner.throttlePeek(queue, intervalMs, options);
  }

  ratePeek(key: string, ratePerMinute: number, burst: number): Promise<RatePeek> {
    return this.inner.ratePeek(key, ratePerMinute, burst);
  }

  rampPeek(queue: string, startMs: number, windowMs: number, ratePerMinute: number): Promise<RatePeek> {
    return this.inner.rampPeek(queue, startMs, windowMs, ratePerMinute);
  }

  throttleConfirm(queue: string, token: string): Promise<void> {
    return this.inner.throttleConfirm(queue, token);
  }

  throttleRefund(queue: string, token: string): Promise<void> {
    this.events.push({ op: "throttleRefund", key: queue, n: 1, nowMs: Date.now(), retryAfterMs: 0 });
    return this.inner.throttleRefund(queue, token);
  }

  throttleReset(queue: string): Promise<void> {
    return this.inner.throttleReset(queue);
  }

  async rateTake(key: string, ratePerMinute: number, burst: number, want: number): Promise<RateTakeResult> {
    const r = await this.inner.rateTake(key, ratePerMinute, burst, want);
    this.events.push({ op: "rateTake", key, n: r.admitted, nowMs: r.nowMs, retryAfterMs: r.retryAfterMs });
    return r;
  }

  rateRefund(key: string, ratePerMinute: number, n: number): Promise<void> {
    if (n > 0) this.events.push({ op: "rateRefund", key, n, nowMs: Date.now(), retryAfterMs: 0 });
    return this.inner.rateRefund(key, ratePerMinute, n);
  }

  rateReset(key: string): Promise<void> {
    return this.inner.rateReset(key);
  }

  async rampTake(
    queue: string,
    startMs: number,
    windowMs: number,
    ratePerMinute: number,
    want: number,
  ): Promise<RateTakeResult> {
    const r = await this.inner.rampTake(queue, startMs, windowMs, ratePerMinute, want);
    this.events.push({
      op: "rampTake",
      key: queue,
      n: r.admitted,
      nowMs: r.nowMs,
      retryAfterMs: r.retryAfterMs,
    });
    return r;
  }

  rampRefund(queue: string, startMs: number, n: number): Promise<void> {
    if (n > 0) this.events.push({ op: "rampRefund", key: queue, n, nowMs: Date.now(), retryAfterMs: 0 });
    return this.inner.rampRefund(queue, startMs, n);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
