/** Reconnect backoff settings. Every field is optional where accepted from users. */
export interface BackoffOptions {
  /** First delay after a failure, in ms. Default 100. */
  initialMs: number;
  /**
   * Upper bound of any delay, in ms, jitter included. Default 4000: a worker is back within about 4 s
   * of a gateway or database outage ending, and a fleet's reconnects still spread over that window.
   */
  maxMs: number;
  /** Growth factor between consecutive failures. Default 2. */
  multiplier: number;
  /** Relative spread around each delay: 0.2 gives ±20%. 0 disables jitter. Default 0.2. */
  jitter: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffOptions> = Object.freeze({
  initialMs: 100,
  maxMs: 4_000,
  multiplier: 2,
  jitter: 0.2,
});

/**
 * Capped exponential backoff with jitter. `next()` after each failure, `reset()` after a success, so a
 * stream that recovers starts again from `initialMs` on its next failure.
 */
export class Backoff {
  readonly #opts: BackoffOptions;
  readonly #random: () => number;
  #failures = 0;

  constructor(opts: Partial<BackoffOptions> = {}, random: () => number = Math.random) {
    this.#opts = { ...DEFAULT_BACKOFF, ...opts };
    this.#random = random;
  }

  /** The delay before the next attempt, in ms; each call counts one more failure. */
  next(): number {
    const { initialMs, maxMs, multiplier, jitter } = this.#opts;
    // Cap the exponent's result before jitter so a long outage doesn't overflow to Infinity.
    const base = Math.min(maxMs, initialMs * multiplier ** this.#failures);
    this.#failures++;
    const spread = base * jitter * (2 * this.#random() - 1);
    return Math.max(0, Math.min(maxMs, Math.round(base + spread)));
  }

  /** Forget past failures. */
  reset(): void {
    this.#failures = 0;
  }
}
