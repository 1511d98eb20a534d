import { randomUUID } from "node:crypto";
import {
  checkInt,
  checkRate,
  emissionIntervalUs,
  type Limiter,
  type RatePeek,
  type RateTakeResult,
  type ThrottlePeek,
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
    const r = this.#throttle(queue, intervalMs, options, false);
    if ("peeked" in r) throw new Error("unreachable: a take is never a peek");
    return r;
  }

  async throttlePeek(
    queue: string,
    intervalMs: number,
    options: ThrottleTakeOptions = {},
  ): Promise<ThrottlePeek> {
    const r = this.#throttle(queue, intervalMs, options, true);
    if ("peeked" in r) return { free: true, held: false, nextMs: r.slotMs, nowMs: r.nowMs };
    if (r.admitted) throw new Error("unreachable: a peek never takes");
    return { free: false, held: r.pending, nextMs: r.nowMs + r.retryAfterMs, nowMs: r.nowMs };
  }

  /** throttle-take-1.lua; `peek` decides without writing (its code 3). */
  #throttle(
    queue: string,
    intervalMs: number,
    options: ThrottleTakeOptions,
    peek: boolean,
  ): ThrottleTakeResult | { peeked: true; slotMs: number; nowMs: number } {
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
    if (peek) return { peeked: true, slotMs: Math.floor(start / 1000), nowMs };
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
    checkInt("want", want, 1);
    const { left: _, ...r } = this.#rate(key, ratePerMinute, burst, want);
    return r;
  }

  async ratePeek(key: string, ratePerMinute: number, burst: number): Promise<RatePeek> {
    const r = this.#rate(key, ratePerMinute, burst, 0);
    return { available: r.left, retryAfterMs: r.left > 0 ? 0 : r.retryAfterMs, nowMs: r.nowMs };
  }

  /** rate-take-1.lua: `want` 0 peeks; `left`, the claims a take right after would get. */
  #rate(key: string, ratePerMinute: number, burst: number, want: number): RateTakeResult & { left: number } {
    checkRate(ratePerMinute);
    checkInt("burst", burst, 1);
    const t = emissionIntervalUs(ratePerMinute);
    const now = this.#now();
    let tat = Math.max(this.#rates.get(key) ?? now, now);
    const admitted = Math.max(0, Math.min(want, Math.floor((now + burst * t - tat) / t)));
    if (admitted > 0) {
      tat += admitted * t;
      this.#rates.set(key, tat);
    }
    const retryAfterMs = usToMsCeil(Math.max(0, tat - (burst - 1) * t - now));
    const left = Math.max(0, Math.floor((now + burst * t - tat) / t));
    return { admitted, retryAfterMs, nowMs: Math.floor(now / 1000), left };
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
    checkInt("want", want, 1);
    const { left: _, ...r } = this.#ramp(queue, startMs, windowMs, ratePerMinute, want);
    return r;
  }

  async rampPeek(queue: string, startMs: number, windowMs: number, ratePerMinute: number): Promise<RatePeek> {
    const r = this.#ramp(queue, startMs, windowMs, ratePerMinute, 0);
    return { available: r.left, retryAfterMs: r.retryAfterMs, nowMs: r.nowMs };
  }

  /** ramp-take-1.lua: `want` 0 peeks; `left`, the claims allowed beyond this take's (-1: no limit). */
  #ramp(
    queue: string,
    startMs: number,
    windowMs: number,
    ratePerMinute: number,
    want: number,
  ): RateTakeResult & { left: number } {
    checkRate(ratePerMinute);
    checkInt("windowMs", windowMs, 1);
    const nowMs = Math.floor(this.#now() / 1000);
    const elapsed = Math.max(0, nowMs - startMs);
    if (elapsed >= windowMs) return { admitted: want, retryAfterMs: 0, nowMs, left: -1 };
    const key = `${queue}\u0000${startMs}`;
    const count = this.#ramps.get(key) ?? 0;
    const perMs = ratePerMinute / 60_000;
    const allowed = Math.floor((perMs * elapsed * elapsed) / (2 * windowMs)) + 1;
    const left = Math.max(0, allowed - count);
    const admitted = Math.min(want, left);
    if (admitted > 0) {
      this.#ramps.set(key, count + admitted);
      return { admitted, retryAfterMs: 0, nowMs, left: left - admitted };
    }
    if (left > 0) return { admitted: 0, retryAfterMs: 0, nowMs, left };
    const due = Math.sqrt((2 * windowMs * count) / perMs);
    return { admitted: 0, retryAfterMs: Math.max(1, Math.ceil(due - elapsed)), nowMs, left: 0 };
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
