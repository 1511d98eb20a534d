/**
 * The cluster-wide limiter: the per-queue throttle slot (flow-control gate 4, `THROTTLE`) and GCRA
 * rates for queue claim rates (gate 5, `RATE_LIMIT`) and flow keys (gate 7, `FLOW_KEY`).
 *
 * Two implementations with the same semantics (one contract suite, `limiter.test.ts`, runs on both):
 * `RedisLimiter` (production; time from Redis `TIME`, shared by every gateway) and `MemoryLimiter`
 * (`taskq dev`; one process, injected clock).
 *
 * Who calls what, when (all at claim time, per queue, after pause / breaker / max_running):
 * - throttled queue: `throttleTake(queue, throttleIntervalMs(limit, periodMs), {version, earlyMs, holdMs})`;
 *   admitted → wait `waitMs`, claim at most one job, then `throttleConfirm` (a job) or `throttleRefund`
 *   (none). Pending → ask again shortly. Refused → verdict `THROTTLE` with `retry_after = retryAfterMs`.
 *   A throttle change or removal bumps its version, which drops the old slot at the next take.
 * - queue claim rate: `rateTake(queueRateKey(queue), ratePerMinute, burst, maxJobs)`; claim up to
 *   `admitted` jobs, then `rateRefund(...)` the difference between `admitted` and the jobs claimed.
 *   `admitted === 0` → verdict `RATE_LIMIT` with `retry_after = retryAfterMs`. While the last take
 *   admitted all it asked for with tokens to spare, the take runs beside the claim, and jobs beyond
 *   `admitted` are unclaimed.
 * - flow key: the same with `flowRateKey(key)` (verdict `FLOW_KEY`).
 *
 * Units: every duration and time is in milliseconds. Internally both implementations keep state in
 * integer microseconds so fractional emission intervals (e.g. 7/min) do not drift.
 * Errors (e.g. Redis unreachable) reject the returned promise; whether a gate then fails open or closed
 * is the caller's decision.
 */

/**
 * The result of {@link Limiter.throttleTake}. `nowMs` is the limiter's clock at the decision (Redis
 * `TIME` for Redis, the injected clock for memory), floored to whole ms; for an admitted take it is the
 * slot's own time (`waitMs` later when the take came early). Tests use it to check spacing.
 * `pending`: another take holds the slot while its claim looks for a job; ask again in `retryAfterMs`
 * (a few ms), since that slot may yet be given back. It is no verdict.
 */
export type ThrottleTakeResult =
  | { admitted: true; token: string; nowMs: number; waitMs: number }
  | { admitted: false; pending: boolean; retryAfterMs: number; nowMs: number };

/** Options of {@link Limiter.throttleTake}; each is off when absent. */
export interface ThrottleTakeOptions {
  /**
   * The throttle's version (taskq.queues.throttle_version): a slot taken under an older version belongs
   * to a throttle that was changed or removed since, and is dropped. A take with an older version than
   * the slot's (a gateway that has not heard of the change yet) leaves the slot alone.
   */
  version?: number;
  /**
   * A take up to this many ms before the slot frees is admitted for the slot's own time (it waits
   * `waitMs`), so a backlog's slots follow each other exactly instead of each arriving a little late.
   */
  earlyMs?: number;
  /**
   * The slot taken stays reserved this long (ms) until {@link Limiter.throttleConfirm} or
   * {@link Limiter.throttleRefund}: meanwhile other takes get `pending`, not a verdict, since the slot
   * may end unused. A reservation never confirmed (its gateway died) counts as spent when it lapses.
   */
  holdMs?: number;
}

/** The result of {@link Limiter.rateTake}. */
export interface RateTakeResult {
  /** Claims admitted now, 0..want. */
  admitted: number;
  /**
   * Exact wait (whole ms, rounded up) from `nowMs` until one more claim would be admitted, counting
   * this take's effect: > 0 when `admitted === 0`; 0 when tokens are left over after this take.
   */
  retryAfterMs: number;
  /** The limiter's clock at the decision, floored to whole ms. */
  nowMs: number;
}

/**
 * What a take would decide now, taking nothing ({@link Limiter.throttlePeek}): whether the slot is
 * free, or reserved by a claim looking for a job (`held`), and when it frees (`nextMs`, the limiter's
 * clock, ms since the epoch; now when free).
 */
export interface ThrottlePeek {
  free: boolean;
  held: boolean;
  nextMs: number;
  nowMs: number;
}

/**
 * What a rate or ramp take would get now, taking nothing: `available` claims (-1: no limit, a ramp
 * whose window is over), and `retryAfterMs` until one more is admitted when none is (0 otherwise).
 */
export interface RatePeek {
  available: number;
  retryAfterMs: number;
  nowMs: number;
}

/** The cluster-wide limiter. Keys are opaque strings; see {@link queueRateKey} / {@link flowRateKey}. */
export interface Limiter {
  /**
   * Queue throttle {limit, period_ms}: one claim per `intervalMs` (see {@link throttleIntervalMs}),
   * cluster-wide, one key per queue. Admits when the queue's next slot time <= now (+ `earlyMs`), taking
   * the slot (next = slot time + intervalMs); otherwise says how long until the next slot (ms, rounded
   * up, >= 1), or that the slot is reserved (`pending`). A slot held under another interval or an older
   * version is dropped. The token identifies the slot taken, for confirm and refund.
   */
  throttleTake(queue: string, intervalMs: number, options?: ThrottleTakeOptions): Promise<ThrottleTakeResult>;
  /** The slot's claim found a job: the slot is spent; other takes stop waiting on its reservation. */
  throttleConfirm(queue: string, token: string): Promise<void>;
  /**
   * Gives back a slot taken for a poll that found no job ("an empty queue spends no slot"), only if
   * nobody took a slot since (token match); otherwise does nothing. The queue's next slot is then what
   * it was before the take.
   */
  throttleRefund(queue: string, token: string): Promise<void>;
  /** Forgets the queue's slot (throttle changed or removed): the next take is admitted at once. */
  throttleReset(queue: string): Promise<void>;
  /**
   * GCRA for a key (`queueRateKey(queue)` or `flowRateKey(key)`): emission interval
   * T = 60000 / ratePerMinute ms; burst b (integer >= 1) lets b claims through at once, then one per T.
   * Over any window of length w, at most b + floor(w / T) claims are admitted (no fixed-window 2x bursts).
   * Admits up to `want` (integer >= 1) claims now, possibly fewer (partial admission).
   */
  rateTake(key: string, ratePerMinute: number, burst: number, want: number): Promise<RateTakeResult>;
  /**
   * Gives back `n` admitted claims that were not used (the claim found fewer jobs), so unused tokens are
   * not spent. Never raises the available claims above the burst. `n === 0` does nothing.
   */
  rateRefund(key: string, ratePerMinute: number, n: number): Promise<void>;
  /** Forgets the key's state (rate changed or removed): the full burst is available at once. */
  rateReset(key: string): Promise<void>;
  /**
   * Slow-start ramp of a queue's claim rate: over `windowMs` from `startMs` (ms since the epoch), the
   * claims allowed since the start grow as rate·t²/(2·window) + 1 (a rate rising linearly from zero),
   * fleet-wide. Admits up to `want`; all of them once the window is over. When 0 are admitted,
   * retryAfterMs is the exact wait until one more is allowed.
   */
  rampTake(
    queue: string,
    startMs: number,
    windowMs: number,
    ratePerMinute: number,
    want: number,
  ): Promise<RateTakeResult>;
  /** Gives back ramp claims that found no job. */
  rampRefund(queue: string, startMs: number, n: number): Promise<void>;
  /**
   * The peeks: what the matching take would decide now, by the same rule (the same script, told to
   * write nothing), taking and changing nothing. Explain reads the gates through them.
   */
  throttlePeek(queue: string, intervalMs: number, options?: ThrottleTakeOptions): Promise<ThrottlePeek>;
  ratePeek(key: string, ratePerMinute: number, burst: number): Promise<RatePeek>;
  rampPeek(queue: string, startMs: number, windowMs: number, ratePerMinute: number): Promise<RatePeek>;
  /** Releases resources (the Redis limiter quits its client). Safe to call twice. */
  close(): Promise<void>;
}

/** The rate key of a queue's claim rate; apart from every flow key's. */
export function queueRateKey(queue: string): string {
  return `queue:${queue}`;
}

/** The rate key of a flow key (limits claims of that key across all queues); apart from queue rates. */
export function flowRateKey(flowKey: string): string {
  return `flow:${flowKey}`;
}

/**
 * The throttle interval of `{limit, period_ms}`: whole ms, at least 1 ms. So 100 per 60000 ms is one
 * claim every 600 ms; a limit above period_ms gives one claim per millisecond.
 */
export function throttleIntervalMs(limit: number, periodMs: number): number {
  return Math.max(1, Math.floor(periodMs / limit));
}

/** The GCRA emission interval in whole µs (at least 1): 60e6 / ratePerMinute, rounded to nearest. */
export function emissionIntervalUs(ratePerMinute: number): number {
  return Math.max(1, Math.round(60_000_000 / ratePerMinute));
}

/**
 * How early a take may come for a slot of `intervalMs` (see ThrottleTakeOptions.earlyMs): 10 ms, less
 * for short intervals (a quarter of them), so a waiting claim never holds a slot for long.
 */
export function throttleEarlyMs(intervalMs: number): number {
  return Math.min(10, intervalMs / 4);
}

/** How long a taken slot stays reserved for its claim at most (ThrottleTakeOptions.holdMs), ms. */
export const THROTTLE_HOLD_MS = 2000;

/** ThrottleTakeOptions checked and in the units both implementations keep (µs). */
export function throttleTakeArgs(o: ThrottleTakeOptions): {
  version: number;
  earlyUs: number;
  holdUs: number;
} {
  const version = o.version ?? 0;
  const earlyUs = Math.round((o.earlyMs ?? 0) * 1000);
  const holdUs = Math.round((o.holdMs ?? 0) * 1000);
  checkInt("version", version, 0);
  checkInt("earlyMs", earlyUs, 0);
  checkInt("holdMs", holdUs, 0);
  return { version, earlyUs, holdUs };
}

/** Throws a RangeError unless `v` is an integer >= `min`. */
export function checkInt(name: string, v: number, min: number): void {
  if (!Number.isSafeInteger(v) || v < min)
    throw new RangeError(`${name} must be an integer >= ${min}, got ${v}`);
}

/** Throws a RangeError unless `ratePerMinute` is a finite number > 0. */
export function checkRate(ratePerMinute: number): void {
  if (!Number.isFinite(ratePerMinute) || ratePerMinute <= 0)
    throw new RangeError(`ratePerMinute must be a finite number > 0, got ${ratePerMinute}`);
}

/** Microseconds to whole ms, rounded up (a wait never ends early). */
export function usToMsCeil(us: number): number {
  return Math.ceil(us / 1000);
}
