import { emissionIntervalUs, throttleIntervalMs } from "../limiter/limiter.js";

/**
 * The limiter's token bucket (GCRA, lua/rate-take-1.lua) in ms, for one replay: a take at `t` is
 * admitted from `nextAt()` on, and moves the theoretical arrival time one emission interval on. A
 * throttle is the same with a burst of 1 (lua/throttle-take-1.lua: one claim per interval; an idle
 * queue's first claim goes at once, an empty queue spends no slot).
 */
export class Gcra {
  #tat = Number.NEGATIVE_INFINITY;

  constructor(
    /** Emission interval, ms. */
    private readonly intervalMs: number,
    private readonly burst: number,
  ) {}

  /** A claim rate or flow-key limit, with the limiter's rounding of the interval to whole µs. */
  static perMinute(ratePerMinute: number, burst: number): Gcra {
    return new Gcra(emissionIntervalUs(ratePerMinute) / 1000, burst);
  }

  /** A throttle {limit, period_ms}: one claim per whole-ms interval. */
  static throttle(limit: number, periodMs: number): Gcra {
    return new Gcra(throttleIntervalMs(limit, periodMs), 1);
  }

  /** The earliest time a take is admitted, ms. */
  nextAt(): number {
    return this.#tat - (this.burst - 1) * this.intervalMs;
  }

  /** Spends one token at `t` (admitted: `t >= nextAt()`). */
  take(t: number): void {
    this.#tat = Math.max(this.#tat, t) + this.intervalMs;
  }
}
