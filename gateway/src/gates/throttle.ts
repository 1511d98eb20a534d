import { setTimeout as sleep } from "node:timers/promises";
import {
  type Limiter,
  THROTTLE_HOLD_MS,
  type ThrottleTakeResult,
  throttleEarlyMs,
  throttleIntervalMs,
} from "../limiter/limiter.js";
import type { QueueSettings } from "../store/queue-store.js";
import type { GateBeforeClaim, Taken } from "./gates.js";
import type { Verdict } from "./verdict.js";

/**
 * Gate 4, the throttle: one claim of one job per interval (period / limit), fleet-wide, through a slot
 * in Redis. A slot whose claim found no job is refunded; one that was used is confirmed. Claims of one
 * throttled queue take turns on a gateway (`turn`), and a refusal is remembered here until the slot
 * comes near (LocalThrottles).
 */
export class ThrottleGate implements GateBeforeClaim {
  readonly reason = "THROTTLE";
  readonly #local: LocalThrottles;

  constructor(
    private readonly limiter: Limiter,
    clock: () => number,
  ) {
    this.#local = new LocalThrottles(clock);
  }

  /** Runs a claim of the queue in its turn: one at a time per throttled queue on this gateway. */
  turn<T>(queue: string, s: QueueSettings, claim: () => Promise<T>): Promise<T> {
    return s.throttle ? this.#local.serial(queue, claim) : claim();
  }

  async take(queue: string, s: QueueSettings): Promise<Taken | Verdict | null> {
    if (!s.throttle) return null;
    const t = await takeThrottleSlot(this.limiter, this.#local, queue, s.throttle, s.throttle_version ?? 0);
    if (!t.admitted) return { queue, reason: "THROTTLE", retryAfterMs: t.retryAfterMs };
    const giveBack = async (used: number) => {
      if (used === 0) return this.limiter.throttleRefund(queue, t.token);
      // Not awaited: the worker's jobs must not wait on Redis bookkeeping (a Redis that hangs would hold
      // them until its command timeout). A confirm that never lands leaves the slot spent when its
      // reservation lapses, which is what a confirm says anyway. The limiter counts the error.
      this.limiter.throttleConfirm(queue, t.token).catch(() => {});
    };
    return { admitted: 1, waitMs: t.waitMs, giveBack };
  }
}

/** An admitted or refused take: {@link takeThrottleSlot} never answers `pending`. */
type SlotTake =
  | Extract<ThrottleTakeResult, { admitted: true }>
  | (Extract<ThrottleTakeResult, { admitted: false }> & { pending: false });

/**
 * Takes the queue's throttle slot for one claim. The slot stays reserved while the claim looks for a
 * job, and a take that meets such a reservation asks again a few ms later instead of answering THROTTLE:
 * that slot may still be given back (an empty queue spends no slot), and a worker must never be sent to
 * sleep for a slot nobody used. A take up to a few ms early gets the slot's own time (`waitMs` later),
 * so a backlog's slots follow each other at exactly the interval. The version drops slots of a changed
 * or removed throttle.
 */
async function takeThrottleSlot(
  limiter: Limiter,
  local: LocalThrottles,
  queue: string,
  throttle: { limit: number; period_ms: number },
  version: number,
): Promise<SlotTake> {
  const interval = throttleIntervalMs(throttle.limit, throttle.period_ms);
  const earlyMs = throttleEarlyMs(interval);
  const known = local.refusedFor(queue, version, earlyMs);
  if (known !== null) return { admitted: false, pending: false, retryAfterMs: known, nowMs: Date.now() };
  const options = { version, earlyMs, holdMs: THROTTLE_HOLD_MS };
  for (;;) {
    const t = await limiter.throttleTake(queue, interval, options);
    if (!t.admitted && !t.pending) local.noteRefused(queue, version, t.retryAfterMs);
    if (t.admitted || !t.pending) return t as SlotTake;
    // Bounded: a reservation lasts one claim, and lapses after THROTTLE_HOLD_MS at most.
    await sleep(t.retryAfterMs);
  }
}

/**
 * One gateway's side of its throttled queues: claims of one queue take turns here (the slot admits one
 * claim per interval anyway), and a refusal is remembered until the slot comes near, so the polls this
 * gateway holds for a slot do not all ask Redis at once: at each slot, one take per gateway does.
 */
class LocalThrottles {
  readonly #tails = new Map<string, Promise<unknown>>();
  readonly #refused = new Map<string, { version: number; freeAt: number }>();

  constructor(private readonly clock: () => number = Date.now) {}

  /** Runs `fn` after the queue's claims before it on this gateway have finished. */
  serial<T>(queue: string, fn: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(queue) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const tail = run.then(
      () => {},
      () => {},
    );
    this.#tails.set(queue, tail);
    void tail.then(() => {
      if (this.#tails.get(queue) === tail) this.#tails.delete(queue);
    });
    return run;
  }

  /** A refusal of this version's slot that still holds: the ms left until the slot frees, else null. */
  refusedFor(queue: string, version: number, earlyMs: number): number | null {
    const r = this.#refused.get(queue);
    if (!r || r.version !== version) return null;
    const left = r.freeAt - this.clock();
    if (left > earlyMs + LOCAL_MARGIN_MS) return Math.ceil(left);
    this.#refused.delete(queue);
    return null;
  }

  /** The limiter refused this version's slot for `retryAfterMs`. */
  noteRefused(queue: string, version: number, retryAfterMs: number): void {
    this.#refused.set(queue, { version, freeAt: this.clock() + retryAfterMs });
  }
}

/** How much sooner than the limiter's early window a remembered refusal lets a take through, ms. */
const LOCAL_MARGIN_MS = 1;
