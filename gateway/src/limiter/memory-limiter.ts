import { randomUUID } from "node:crypto";
import {
  checkInt,
  checkRate,
  emissionIntervalUs,
  type Limiter,
  type RateTakeResult,
  type ThrottleTakeOptions,
  type ThrottleTakeResult,
  throttleTakeArgs,
  usToMsCeil,
} from "./limiter.js";

/** Every this many operations, entries whose time has passed (equal to "absent") are dropped. */
const SWEEP_EVERY = 1024;

/**
 * The in-process limiter of `taskq dev`: the same semantics as the Redis scripts (`lua/*.lua`, mirrored
 * line by line below), state in integer µs, time from `clock` (ms since the epoch; default `Date.now`),
 * so tests drive it with a fake clock. Idle entries are swept, as Redis expires idle keys.
 */
export class MemoryLimiter implements Limiter {
  readonly #clock: () => number;
  /** queue → the slot: as the hash of lua/throttle-take-1.lua (times in µs). */
  readonly #throttles = new Map<
    string,
    { next: number; prev: number; token: string | null; interval: number; version: number; held: number }
  >();
  /** rate key → TAT, the theoretical arrival time (µs). */
  readonly #rates = new Map<string, number>();
  /** queue + ramp start → claims admitted since (ramps are short; they end with their window). */
  readonly #ramps = new Map<string, number>();
  #ops = 0;

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  /** Entries held (throttle slots + rate keys), for tests of the sweep. */
  get size(): number {
    return this.#throttles.size + this.#rates.size;
  }

  async throttleTake(
    queue: string,
    intervalMs: number,
    options: ThrottleTakeOptions = {},
  ): Promise<ThrottleTakeResult> {
    checkInt("intervalMs", intervalMs, 1);
    const o = throttleTakeArgs(options);
    const now = this.#now();
    const nowMs = Math.floor(now / 1000);
    const slot = this.#throttles.get(queue);
    let next: number | null = slot?.next ?? null;
    let held: number | null = slot?.held ?? null;
    let version = o.version;
    const stored = slot?.version ?? 0;
    if (stored > version) {
      // This caller has not heard of the newer throttle yet: the slot stands.
      version = stored;
    } else if (stored < version || slot?.interval !== intervalMs) {
      // A slot held under an older version or another interval belongs to an old throttle: dropped.
      next = null;
      held = null;
    }
    if (next !== null && next - now > o.earlyUs) {
      // While the last take's claim still looks for a job, its slot may yet be given back: no verdict.
      if (held !== null && held > now)
        return { admitted: false, pending: true, retryAfterMs: Math.min(5, usToMsCeil(held - now)), nowMs };
      return { admitted: false, pending: false, retryAfterMs: usToMsCeil(next - now), nowMs };
    }
    const start = next !== null && next > now ? next : now;
    const token = randomUUID();
    this.#throttles.set(queue, {
      next: start + intervalMs * 1000,
      prev: next ?? 0,
      token,
      interval: intervalMs,
      version,
      held: now + o.holdUs,
    });
    return { admitted: true, token, nowMs: Math.floor(start / 1000), waitMs: usToMsCeil(start - now) };
  }

  async throttleConfirm(queue: string, token: string): Promise<void> {
    const slot = this.#throttles.get(queue);
    if (slot && slot.token === token) slot.held = 0;
  }

  async throttleRefund(queue: string, token: string): Promise<void> {
    // Nothing changed the slot since the take, or the token would differ: "before the take" is exact.
    const slot = this.#throttles.get(queue);
    if (slot && slot.token === token) {
      slot.next = slot.prev;
      slot.token = null;
      slot.held = 0;
    }
  }

  async throttleReset(queue: string): Promise<void> {
    this.#throttles.delete(queue);
  }

  async rateTake(key: string, ratePerMinute: number, burst: number, want: number): Promise<RateTakeResult> {
    checkRate(ratePerMinute);
    checkInt("burst", burst, 1);
    checkInt("want", want, 1);
    const t = emissionIntervalUs(ratePerMinute);
    const now = this.#now();
    let tat = Math.max(this.#rates.get(key) ?? now, now);
    const admitted = Math.max(0, Math.min(want, Math.floor((now + burst * t - tat) / t)));
    if (admitted > 0) {
      tat += admitted * t;
      this.#rates.set(key, tat);
    }
    const retryAfterMs = usToMsCeil(Math.max(0, tat - (burst - 1) * t - now));
    return { admitted, retryAfterMs, nowMs: Math.floor(now / 1000) };
  }

  async rateRefund(key: string, ratePerMinute: number, n: number): Promise<void> {
    checkRate(ratePerMinute);
    checkInt("n", n, 0);
    const stored = this.#rates.get(key);
    if (n === 0 || stored === undefined) return;
    const tat = stored - n * emissionIntervalUs(ratePerMinute);
    if (tat <= this.#now()) this.#rates.delete(key);
    else this.#rates.set(key, tat);
  }

  async rateReset(key: string): Promise<void> {
    this.#rates.delete(key);
  }

  async rampTake(
    queue: string,
    startMs: number,
    windowMs: number,
    ratePerMinute: number,
    want: number,
  ): Promise<RateTakeResult> {
    checkRate(ratePerMinute);
    checkInt("windowMs", windowMs, 1);
    checkInt("want", want, 1);
    const nowMs = Math.floor(this.#now() / 1000);
    const elapsed = Math.max(0, nowMs - startMs);
    if (elapsed >= windowMs) return { admitted: want, retryAfterMs: 0, nowMs };
    const key = `${queue}\u0000${startMs}`;
    const count = this.#ramps.get(key) ?? 0;
    const perMs = ratePerMinute / 60_000;
    const allowed = Math.floor((perMs * elapsed * elapsed) / (2 * windowMs)) + 1;
    const admitted = Math.max(0, Math.min(want, allowed - count));
    if (admitted > 0) {
      this.#ramps.set(key, count + admitted);
      return { admitted, retryAfterMs: 0, nowMs };
    }
    const due = Math.sqrt((2 * windowMs * count) / perMs);
    return { admitted: 0, retryAfterMs: Math.max(1, Math.ceil(due - elapsed)), nowMs };
  }

  async rampRefund(queue: string, startMs: number, n: number): Promise<void> {
    checkInt("n", n, 0);
    const key = `${queue}\u0000${startMs}`;
    const count = (this.#ramps.get(key) ?? 0) - n;
    if (count <= 0) this.#ramps.delete(key);
    else this.#ramps.set(key, count);
  }

  async close(): Promise<void> {
    this.#throttles.clear();
    this.#rates.clear();
    this.#ramps.clear();
  }

  /** The clock in integer µs; now and then drops entries whose time has passed. */
  #now(): number {
    const now = Math.floor(this.#clock() * 1000);
    if (++this.#ops % SWEEP_EVERY === 0) {
      for (const [q, slot] of this.#throttles)
        if (slot.next <= now && slot.held <= now) this.#throttles.delete(q);
      for (const [k, tat] of this.#rates) if (tat <= now) this.#rates.delete(k);
    }
    return now;
  }
}
