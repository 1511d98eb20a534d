import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { describe, expect, it, onTestFinished } from "vitest";
import { haveService, testRedis } from "../testing/services.js";
import { flowRateKey, type Limiter, queueRateKey, throttleIntervalMs } from "./limiter.js";
import { MemoryLimiter } from "./memory-limiter.js";
import { RedisLimiter } from "./redis-limiter.js";

/** What a contract test needs from an implementation. */
interface Harness {
  limiter: Limiter;
  /** True when time is a fake clock: waits are exact and take no real time. */
  exact: boolean;
  /** Lets `ms` of limiter time pass (advances the fake clock, or sleeps a little longer than `ms`). */
  wait(ms: number): Promise<void>;
}

function newRedisLimiter(prefix: string): RedisLimiter {
  const limiter = new RedisLimiter(testRedis({ maxRetriesPerRequest: 1 }), { prefix });
  onTestFinished(() => limiter.close());
  return limiter;
}

const randomPrefix = () => `taskq-test-${randomBytes(6).toString("hex")}:`;
const redisAvailable = haveService("redis");

const impls: { name: string; available: boolean; setup: () => Harness }[] = [
  {
    name: "memory",
    available: true,
    setup: () => {
      let now = 1_700_000_000_000;
      const limiter = new MemoryLimiter(() => now);
      onTestFinished(() => limiter.close());
      return {
        limiter,
        exact: true,
        wait: async (ms) => {
          now += ms;
        },
      };
    },
  },
  {
    name: "redis",
    available: redisAvailable,
    setup: () => ({
      limiter: newRedisLimiter(randomPrefix()),
      exact: false,
      // Node timers can fire ~1 ms early by Redis TIME's reckoning: sleep a little longer than asked.
      wait: (ms) => sleep(ms + 3),
    }),
  },
];

/**
 * Asserts a retryAfterMs: `ideal` is the wait from the first decision; `sinceMs` the limiter time that
 * passed between that decision and this one. Exact on a fake clock; within 1 ms on Redis (floored
 * ms times), never more than `ideal` and always > 0.
 */
function expectWait(h: Harness, actual: number, ideal: number, sinceMs: number): void {
  if (h.exact) {
    expect(actual).toBe(ideal - sinceMs);
    return;
  }
  expect(actual).toBeGreaterThan(0);
  expect(actual).toBeLessThanOrEqual(ideal);
  expect(actual).toBeGreaterThanOrEqual(ideal - sinceMs - 1);
  expect(actual).toBeLessThanOrEqual(ideal - sinceMs + 1);
}

/**
 * Every window [a_i, a_j] (admissions sorted by time) holding more than burst + floor(span / T) claims,
 * where span = a_j - a_i + slackMs: [] when GCRA's promise holds.
 */
function worstWindow(
  admissions: readonly { at: number; n: number }[],
  burst: number,
  T: number,
  slackMs = 0,
): { from: number; to: number; admitted: number; allowed: number }[] {
  const bad: { from: number; to: number; admitted: number; allowed: number }[] = [];
  admissions.forEach((first, i) => {
    let admitted = 0;
    for (const a of admissions.slice(i)) {
      admitted += a.n;
      const allowed = burst + Math.floor((a.at - first.at + slackMs) / T);
      if (admitted > allowed && bad.length < 5) bad.push({ from: first.at, to: a.at, admitted, allowed });
    }
  });
  return bad;
}

describe("throttleIntervalMs", () => {
  it("is period / limit in whole ms, at least 1 ms", () => {
    expect(throttleIntervalMs(100, 60_000)).toBe(600);
    expect(throttleIntervalMs(3, 1_000)).toBe(333);
    expect(throttleIntervalMs(1, 86_400_000)).toBe(86_400_000);
    expect(throttleIntervalMs(1_000, 1_000)).toBe(1);
    expect(throttleIntervalMs(100_000, 1_000)).toBe(1);
    expect(throttleIntervalMs(1_001, 1_000)).toBe(1);
  });
});

for (const impl of impls) {
  describe.skipIf(!impl.available)(`limiter contract: ${impl.name}`, () => {
    describe("throttle", () => {
      it("admits one claim per interval and says exactly how long until the next", async () => {
        const h = impl.setup();
        const first = await h.limiter.throttleTake("q", 300);
        if (!first.admitted) throw new Error("first take refused");
        const second = await h.limiter.throttleTake("q", 300);
        if (second.admitted) throw new Error("second take admitted within the interval");
        expectWait(h, second.retryAfterMs, 300, second.nowMs - first.nowMs);
        await h.wait(second.retryAfterMs);
        const third = await h.limiter.throttleTake("q", 300);
        if (!third.admitted) throw new Error("take after retryAfterMs refused");
        expect(third.nowMs - first.nowMs).toBeGreaterThanOrEqual(300);
        const fourth = await h.limiter.throttleTake("q", 300);
        expect(fourth.admitted).toBe(false);
        if (!fourth.admitted) expectWait(h, fourth.retryAfterMs, 300, fourth.nowMs - third.nowMs);
      });

      it("gives the slot back after an empty claim: the next take is admitted at once", async () => {
        const h = impl.setup();
        const taken = await h.limiter.throttleTake("q", 5_000);
        if (!taken.admitted) throw new Error("refused");
        await h.limiter.throttleRefund("q", taken.token);
        const again = await h.limiter.throttleTake("q", 5_000);
        expect(again.admitted).toBe(true);
        expect((await h.limiter.throttleTake("q", 5_000)).admitted).toBe(false);
      });

      it("ignores a refund with a stale token", async () => {
        const h = impl.setup();
        const a = await h.limiter.throttleTake("q", 200);
        if (!a.admitted) throw new Error("refused");
        await h.wait(200);
        const b = await h.limiter.throttleTake("q", 200);
        if (!b.admitted) throw new Error("refused");
        await h.limiter.throttleRefund("q", a.token);
        expect((await h.limiter.throttleTake("q", 200)).admitted).toBe(false);
        await h.limiter.throttleRefund("q", "never-issued");
        expect((await h.limiter.throttleTake("q", 200)).admitted).toBe(false);
        // A refund after a reset and a new take does not give back the new slot.
        await h.limiter.throttleReset("q");
        expect((await h.limiter.throttleTake("q", 200)).admitted).toBe(true);
        await h.limiter.throttleRefund("q", b.token);
        expect((await h.limiter.throttleTake("q", 200)).admitted).toBe(false);
      });

      it("reset drops the slot: the next take is admitted at once, at the new interval", async () => {
        const h = impl.setup();
        expect((await h.limiter.throttleTake("q", 60_000)).admitted).toBe(true);
        expect((await h.limiter.throttleTake("q", 60_000)).admitted).toBe(false);
        await h.limiter.throttleReset("q");
        const after = await h.limiter.throttleTake("q", 400);
        expect(after.admitted).toBe(true);
        const next = await h.limiter.throttleTake("q", 400);
        if (next.admitted) throw new Error("admitted within the new interval");
        expectWait(h, next.retryAfterMs, 400, next.nowMs - after.nowMs);
      });

      it("a changed interval drops the slot the old throttle held, with no reset", async () => {
        const h = impl.setup();
        expect((await h.limiter.throttleTake("q", 60_000)).admitted).toBe(true);
        const changed = await h.limiter.throttleTake("q", 400);
        expect(changed.admitted).toBe(true);
        const next = await h.limiter.throttleTake("q", 400);
        if (next.admitted) throw new Error("admitted within the new interval");
        if (!changed.admitted) throw new Error("unreachable");
        expectWait(h, next.retryAfterMs, 400, next.nowMs - changed.nowMs);
      });

      it("keeps one slot per queue", async () => {
        const h = impl.setup();
        expect((await h.limiter.throttleTake("a", 60_000)).admitted).toBe(true);
        expect((await h.limiter.throttleTake("b", 60_000)).admitted).toBe(true);
        expect((await h.limiter.throttleTake("a", 60_000)).admitted).toBe(false);
      });

      it("a 1 ms interval admits one claim per millisecond", async () => {
        const h = impl.setup();
        const a = await h.limiter.throttleTake("q", throttleIntervalMs(5_000, 1_000));
        if (!a.admitted) throw new Error("refused");
        const b = await h.limiter.throttleTake("q", 1);
        // Either still in the same ms (refused for exactly 1 ms) or a later ms.
        if (b.admitted) expect(b.nowMs).toBeGreaterThan(a.nowMs);
        else expect(b.retryAfterMs).toBe(1);
        await h.wait(1);
        expect((await h.limiter.throttleTake("q", 1)).admitted).toBe(true);
      });

      it("refuses a bad interval", async () => {
        const h = impl.setup();
        await expect(h.limiter.throttleTake("q", 0)).rejects.toThrow(RangeError);
        await expect(h.limiter.throttleTake("q", 1.5)).rejects.toThrow(RangeError);
      });

      it("a newer version drops the slot (a removal or change, same interval); an older one leaves it", async () => {
        const h = impl.setup();
        expect((await h.limiter.throttleTake("q", 60_000, { version: 1 })).admitted).toBe(true);
        expect((await h.limiter.throttleTake("q", 60_000, { version: 1 })).admitted).toBe(false);
        // The throttle was removed and set again to the same {1, 60000}: version 2.
        const renewed = await h.limiter.throttleTake("q", 60_000, { version: 2 });
        expect(renewed.admitted).toBe(true);
        // A gateway that has not heard of version 2 yet neither drops nor takes it.
        expect((await h.limiter.throttleTake("q", 60_000, { version: 1 })).admitted).toBe(false);
        expect((await h.limiter.throttleTake("q", 60_000, { version: 2 })).admitted).toBe(false);
        // {1, 60000} -> {2, 120000}: the same interval, a new version.
        expect((await h.limiter.throttleTake("q", 60_000, { version: 3 })).admitted).toBe(true);
      });

      it("a reserved slot answers pending, not a verdict, until confirmed (then refused) or refunded (then admitted)", async () => {
        const h = impl.setup();
        const hold = { holdMs: 2_000 };
        const a = await h.limiter.throttleTake("q", 10_000, hold);
        if (!a.admitted) throw new Error("refused");
        const during = await h.limiter.throttleTake("q", 10_000, hold);
        expect(during).toMatchObject({ admitted: false, pending: true });
        if (!during.admitted) expect(during.retryAfterMs).toBeLessThanOrEqual(5);
        await h.limiter.throttleRefund("q", a.token);
        const b = await h.limiter.throttleTake("q", 10_000, hold);
        if (!b.admitted) throw new Error("refused after the refund");
        await h.limiter.throttleConfirm("q", b.token);
        const after = await h.limiter.throttleTake("q", 10_000, hold);
        expect(after).toMatchObject({ admitted: false, pending: false });
        if (!after.admitted) expectWait(h, after.retryAfterMs, 10_000, after.nowMs - b.nowMs);
      });

      it("a reservation never confirmed counts as spent once it lapses", async () => {
        const h = impl.setup();
        const a = await h.limiter.throttleTake("q", 10_000, { holdMs: 50 });
        if (!a.admitted) throw new Error("refused");
        await h.wait(60);
        expect(await h.limiter.throttleTake("q", 10_000, { holdMs: 50 })).toMatchObject({
          admitted: false,
          pending: false,
        });
      });

      it("a take up to earlyMs before the slot frees gets the slot's own time: slots follow at exactly the interval", async () => {
        const h = impl.setup();
        const a = await h.limiter.throttleTake("q", 100, { earlyMs: 20 });
        if (!a.admitted) throw new Error("refused");
        expect(a.waitMs).toBe(0);
        const tooEarly = await h.limiter.throttleTake("q", 100, { earlyMs: 20 });
        expect(tooEarly.admitted).toBe(false);
        await h.wait(82);
        const b = await h.limiter.throttleTake("q", 100, { earlyMs: 20 });
        if (!b.admitted) throw new Error("refused within the early window");
        expect(b.nowMs - a.nowMs).toBe(100);
        expect(b.waitMs).toBeGreaterThan(0);
        expect(b.waitMs).toBeLessThanOrEqual(20);
        // A refund puts the next slot back where it was before the take.
        await h.limiter.throttleRefund("q", b.token);
        const c = await h.limiter.throttleTake("q", 100, { earlyMs: 20 });
        if (!c.admitted) throw new Error("refused after the refund");
        // On Redis real time has passed meanwhile, maybe beyond the slot's time.
        if (h.exact) expect(c.nowMs - a.nowMs).toBe(100);
        else expect(c.nowMs - a.nowMs).toBeGreaterThanOrEqual(100);
      });
    });

    describe("rate (GCRA)", () => {
      // 600 per minute: T = 100 ms.
      it("admits the burst at once, then exactly one per T", async () => {
        const h = impl.setup();
        const k = queueRateKey("q");
        const burst = await h.limiter.rateTake(k, 600, 3, 3);
        expect(burst.admitted).toBe(3);
        expectWait(h, burst.retryAfterMs, 100, 0);
        const refused = await h.limiter.rateTake(k, 600, 3, 1);
        expect(refused.admitted).toBe(0);
        expectWait(h, refused.retryAfterMs, 100, refused.nowMs - burst.nowMs);
        await h.wait(refused.retryAfterMs);
        const one = await h.limiter.rateTake(k, 600, 3, 3);
        expect(one.admitted).toBe(1);
        const none = await h.limiter.rateTake(k, 600, 3, 1);
        expect(none.admitted).toBe(0);
        // The burst's last slot frees 200 ms after the burst.
        expectWait(h, none.retryAfterMs, 200, none.nowMs - burst.nowMs);
      });

      it("admits partially: want 5 with 2 available gives 2", async () => {
        const h = impl.setup();
        const k = flowRateKey("tenant-1");
        const first = await h.limiter.rateTake(k, 600, 5, 3);
        expect(first).toMatchObject({ admitted: 3, retryAfterMs: 0 });
        const partial = await h.limiter.rateTake(k, 600, 5, 5);
        expect(partial.admitted).toBe(2);
        expectWait(h, partial.retryAfterMs, 100, partial.nowMs - first.nowMs);
        expect((await h.limiter.rateTake(k, 600, 5, 5)).admitted).toBe(0);
      });

      it("says the exact wait for a fractional emission interval (7 per minute)", async () => {
        const h = impl.setup();
        const k = queueRateKey("q");
        const a = await h.limiter.rateTake(k, 7, 1, 1);
        expect(a.admitted).toBe(1);
        const b = await h.limiter.rateTake(k, 7, 1, 1);
        expect(b.admitted).toBe(0);
        // T = 60000 / 7 = 8571.43 ms, rounded up to whole ms.
        expectWait(h, b.retryAfterMs, 8572, b.nowMs - a.nowMs);
        if (h.exact) {
          await h.wait(8571);
          expect((await h.limiter.rateTake(k, 7, 1, 1)).admitted).toBe(0);
          await h.wait(1);
          expect((await h.limiter.rateTake(k, 7, 1, 1)).admitted).toBe(1);
        }
      });

      it("refund gives unused claims back, never above the burst", async () => {
        const h = impl.setup();
        const k = queueRateKey("q");
        expect((await h.limiter.rateTake(k, 600, 2, 2)).admitted).toBe(2);
        await h.limiter.rateRefund(k, 600, 1);
        expect((await h.limiter.rateTake(k, 600, 2, 2)).admitted).toBe(1);
        expect((await h.limiter.rateTake(k, 600, 2, 2)).admitted).toBe(0);
        await h.limiter.rateRefund(k, 600, 10);
        expect((await h.limiter.rateTake(k, 600, 2, 10)).admitted).toBe(2);
        await h.limiter.rateRefund(k, 600, 0);
        expect((await h.limiter.rateTake(k, 600, 2, 1)).admitted).toBe(0);
        // A refund on a key with no state changes nothing.
        await h.limiter.rateRefund(flowRateKey("idle"), 600, 3);
        expect((await h.limiter.rateTake(flowRateKey("idle"), 600, 2, 10)).admitted).toBe(2);
      });

      it("reset restores the full burst", async () => {
        const h = impl.setup();
        const k = queueRateKey("q");
        expect((await h.limiter.rateTake(k, 1, 4, 9)).admitted).toBe(4);
        expect((await h.limiter.rateTake(k, 1, 4, 1)).admitted).toBe(0);
        await h.limiter.rateReset(k);
        expect((await h.limiter.rateTake(k, 1, 4, 9)).admitted).toBe(4);
      });

      it("keeps queue rates, flow keys and throttles apart", async () => {
        const h = impl.setup();
        expect((await h.limiter.rateTake(queueRateKey("x"), 1, 1, 1)).admitted).toBe(1);
        expect((await h.limiter.rateTake(queueRateKey("x"), 1, 1, 1)).admitted).toBe(0);
        expect((await h.limiter.rateTake(flowRateKey("x"), 1, 1, 1)).admitted).toBe(1);
        expect((await h.limiter.rateTake(queueRateKey("y"), 1, 1, 1)).admitted).toBe(1);
        expect((await h.limiter.throttleTake("x", 60_000)).admitted).toBe(true);
      });

      it("refuses bad arguments", async () => {
        const h = impl.setup();
        const k = queueRateKey("q");
        await expect(h.limiter.rateTake(k, 0, 1, 1)).rejects.toThrow(RangeError);
        await expect(h.limiter.rateTake(k, Number.NaN, 1, 1)).rejects.toThrow(RangeError);
        await expect(h.limiter.rateTake(k, 60, 0, 1)).rejects.toThrow(RangeError);
        await expect(h.limiter.rateTake(k, 60, 1, 0)).rejects.toThrow(RangeError);
        await expect(h.limiter.rateRefund(k, 60, -1)).rejects.toThrow(RangeError);
      });
    });

    describe("peeks (explain): what a take would decide, taking nothing", () => {
      it("throttle: free, then refused until the slot frees, and a peek never takes the slot", async () => {
        const h = impl.setup();
        const before = await h.limiter.throttlePeek("q", 5_000);
        expect(before).toMatchObject({ free: true, held: false });
        expect(before.nextMs).toBe(before.nowMs);
        // Peeking did not take it: the take is admitted at once.
        const taken = await h.limiter.throttleTake("q", 5_000, { holdMs: 2_000 });
        if (!taken.admitted) throw new Error("take after a peek refused");
        const held = await h.limiter.throttlePeek("q", 5_000, { holdMs: 2_000 });
        expect(held).toMatchObject({ free: false, held: true });
        await h.limiter.throttleConfirm("q", taken.token);
        const spent = await h.limiter.throttlePeek("q", 5_000);
        expect(spent).toMatchObject({ free: false, held: false });
        // Whole ms from µs state: up to 1 ms of rounding.
        expect(spent.nextMs - taken.nowMs).toBeGreaterThanOrEqual(5_000);
        expect(spent.nextMs - taken.nowMs).toBeLessThanOrEqual(5_001);
        const again = await h.limiter.throttleTake("q", 5_000);
        expect(again.admitted).toBe(false);
        if (!again.admitted)
          expect(Math.abs(again.nowMs + again.retryAfterMs - spent.nextMs)).toBeLessThanOrEqual(1);
      });

      it("rate: the tokens left and the wait for the next, unchanged by peeking", async () => {
        const h = impl.setup();
        const k = queueRateKey("q");
        // 600 per minute: T = 100 ms, burst 3.
        expect(await h.limiter.ratePeek(k, 600, 3)).toMatchObject({ available: 3, retryAfterMs: 0 });
        await h.limiter.rateTake(k, 600, 3, 2);
        expect(await h.limiter.ratePeek(k, 600, 3)).toMatchObject({ available: 1, retryAfterMs: 0 });
        expect(await h.limiter.ratePeek(k, 600, 3)).toMatchObject({ available: 1 });
        const last = await h.limiter.rateTake(k, 600, 3, 5);
        expect(last.admitted).toBe(1);
        const empty = await h.limiter.ratePeek(k, 600, 3);
        expect(empty.available).toBe(0);
        expectWait(h, empty.retryAfterMs, 100, empty.nowMs - last.nowMs);
        const refused = await h.limiter.rateTake(k, 600, 3, 1);
        expect(refused.admitted).toBe(0);
      });

      it("ramp: claims allowed now, the wait for the next, no limit once the window is over", async () => {
        const h = impl.setup();
        const start = (await h.limiter.ratePeek("clock", 60, 1)).nowMs;
        expect(await h.limiter.rampPeek("q", start, 10_000, 600)).toMatchObject({ available: 1 });
        expect((await h.limiter.rampTake("q", start, 10_000, 600, 5)).admitted).toBe(1);
        const next = await h.limiter.rampPeek("q", start, 10_000, 600);
        expect(next.available).toBe(0);
        expect(next.retryAfterMs).toBeGreaterThan(1000);
        expect((await h.limiter.rampTake("q", start - 20_000, 10_000, 600, 1)).admitted).toBe(1);
        expect(await h.limiter.rampPeek("q", start - 20_000, 10_000, 600)).toMatchObject({ available: -1 });
      });
    });
  });
}

describe("memory limiter over simulated time", () => {
  it("never admits more than burst + elapsed / T in any window, and keeps up with demand", async () => {
    let now = 1_700_000_000_000;
    const start = now;
    const limiter = new MemoryLimiter(() => now);
    const T = 60; // 1000 per minute
    const burst = 5;
    let seed = 42;
    const rand = () => {
      seed = (seed * 16_807) % 2_147_483_647;
      return seed / 2_147_483_647;
    };
    const admissions: { at: number; n: number }[] = [];
    while (now - start < 60_000) {
      const r = await limiter.rateTake(queueRateKey("q"), 1000, burst, 1 + Math.floor(rand() * 4));
      if (r.admitted > 0) admissions.push({ at: now, n: r.admitted });
      now += Math.floor(rand() * 37);
    }
    expect(worstWindow(admissions, burst, T)).toEqual([]);
    const total = admissions.reduce((s, a) => s + a.n, 0);
    // Demand always exceeds the rate, so the limiter admits what the rate allows (polls are <= 36 ms late).
    expect(total).toBeGreaterThanOrEqual(burst + Math.floor(60_000 / T) - 3);
    expect(total).toBeLessThanOrEqual(burst + Math.ceil(60_000 / T));
  });

  it("never admits more than burst + elapsed / T around idle gaps, and refills the burst after them", async () => {
    let now = 1_700_000_000_000;
    const start = now;
    const limiter = new MemoryLimiter(() => now);
    const T = 100; // 600 per minute
    const burst = 8;
    let seed = 7;
    const rand = () => {
      seed = (seed * 16_807) % 2_147_483_647;
      return seed / 2_147_483_647;
    };
    const admissions: { at: number; n: number }[] = [];
    let refills = 0;
    while (now - start < 60_000) {
      const idle = rand() < 0.05;
      now += idle ? burst * T + Math.floor(rand() * 3_000) : Math.floor(rand() * 150);
      const r = await limiter.rateTake(flowRateKey("k"), 600, burst, 1 + Math.floor(rand() * 10));
      if (r.admitted > 0) admissions.push({ at: now, n: r.admitted });
      if (idle) {
        // After an idle gap of at least burst * T the whole burst is there (as much as was wanted).
        const more =
          r.admitted < burst ? await limiter.rateTake(flowRateKey("k"), 600, burst, burst) : undefined;
        if (more && more.admitted > 0) admissions.push({ at: now, n: more.admitted });
        expect(r.admitted + (more?.admitted ?? 0)).toBe(burst);
        refills++;
      }
    }
    expect(refills).toBeGreaterThan(5);
    expect(worstWindow(admissions, burst, T)).toEqual([]);
  });

  it("sweeps entries whose time has passed", async () => {
    let now = 1_700_000_000_000;
    const limiter = new MemoryLimiter(() => now);
    for (let i = 0; i < 500; i++) {
      await limiter.throttleTake(`q${i}`, 10);
      await limiter.rateTake(flowRateKey(`k${i}`), 6000, 1, 1);
    }
    expect(limiter.size).toBe(1000);
    now += 1_000;
    for (let i = 0; i < 100; i++) await limiter.throttleTake("busy", 10_000);
    expect(limiter.size).toBe(1);
  });
});

describe.skipIf(!redisAvailable)("redis limiter", () => {
  it("uses hash-tagged keys that expire when idle", async () => {
    const prefix = randomPrefix();
    const limiter = newRedisLimiter(prefix);
    const raw = testRedis();
    onTestFinished(async () => {
      await raw.quit();
    });
    expect(limiter.throttleKey("q")).toBe(`${prefix}{throttle:q}`);
    expect(limiter.rateKey(flowRateKey("k"))).toBe(`${prefix}{rate:flow:k}`);
    await limiter.throttleTake("q", 500);
    const throttleTtl = await raw.pttl(`${prefix}{throttle:q}`);
    expect(throttleTtl).toBeGreaterThan(400);
    expect(throttleTtl).toBeLessThanOrEqual(501);
    await limiter.rateTake(flowRateKey("k"), 600, 3, 2); // TAT = now + 200 ms
    const rateTtl = await raw.pttl(`${prefix}{rate:flow:k}`);
    expect(rateTtl).toBeGreaterThan(100);
    expect(rateTtl).toBeLessThanOrEqual(201);
    await sleep(600);
    expect(await raw.exists(`${prefix}{throttle:q}`, `${prefix}{rate:flow:k}`)).toBe(0);
  });

  it("refuses a prefix with braces", () => {
    expect(() => new RedisLimiter(new Redis({ lazyConnect: true }), { prefix: "a{b}:" })).toThrow(RangeError);
  });

  it("throttles cluster-wide to the ms: 100 ms interval, 3 gateways polling for 2 s", async () => {
    const prefix = randomPrefix();
    const gateways = [newRedisLimiter(prefix), newRedisLimiter(prefix), newRedisLimiter(prefix)];
    const admittedAt: number[] = [];
    const deadline = Date.now() + 2_000;
    await Promise.all(
      gateways.map(async (limiter) => {
        while (Date.now() < deadline) {
          const r = await limiter.throttleTake("hot", 100);
          if (r.admitted) admittedAt.push(r.nowMs);
          await sleep(1 + Math.random() * 3);
        }
      }),
    );
    admittedAt.sort((a, b) => a - b);
    console.log(`3 gateways, 2 s at 100 ms: ${admittedAt.length} admitted`);
    expect(admittedAt.length).toBeGreaterThanOrEqual(19);
    expect(admittedAt.length).toBeLessThanOrEqual(21);
    for (let i = 1; i < admittedAt.length; i++)
      expect((admittedAt[i] ?? 0) - (admittedAt[i - 1] ?? 0)).toBeGreaterThanOrEqual(99);
  });

  it("meters a GCRA key cluster-wide: 3 gateways never exceed burst + elapsed / T", async () => {
    const prefix = randomPrefix();
    const gateways = [newRedisLimiter(prefix), newRedisLimiter(prefix), newRedisLimiter(prefix)];
    const admissions: { at: number; n: number }[] = [];
    const deadline = Date.now() + 1_500;
    await Promise.all(
      gateways.map(async (limiter) => {
        while (Date.now() < deadline) {
          const r = await limiter.rateTake(flowRateKey("tenant"), 1_200, 4, 3); // T = 50 ms
          if (r.admitted > 0) admissions.push({ at: r.nowMs, n: r.admitted });
          await sleep(1 + Math.random() * 3);
        }
      }),
    );
    admissions.sort((a, b) => a.at - b.at);
    const total = admissions.reduce((s, a) => s + a.n, 0);
    console.log(`3 gateways, 1.5 s at T = 50 ms, burst 4: ${total} admitted`);
    expect(total).toBeGreaterThanOrEqual(4 + 1_500 / 50 - 3);
    expect(total).toBeLessThanOrEqual(4 + 1_500 / 50 + 1);
    // +1 ms: Redis times are floored to whole ms.
    expect(worstWindow(admissions, 4, 50, 1)).toEqual([]);
  });
});

describe("ramp (memory, exact clock)", () => {
  const setup = () => {
    let now = 1_700_000_000_000;
    const limiter = new MemoryLimiter(() => now);
    return { limiter, start: now, advance: (ms: number) => (now += ms) };
  };

  it("admits rate·t²/(2·window) + 1 claims since the start, with the exact wait for the next", async () => {
    const { limiter, start, advance } = setup();
    // 600/min = 0.01 per ms over a 10 s window.
    expect((await limiter.rampTake("q", start, 10_000, 600, 5)).admitted).toBe(1);
    const wait = await limiter.rampTake("q", start, 10_000, 600, 1);
    expect(wait).toMatchObject({ admitted: 0, retryAfterMs: Math.ceil(Math.sqrt((2 * 10_000 * 1) / 0.01)) });
    advance(wait.retryAfterMs);
    expect((await limiter.rampTake("q", start, 10_000, 600, 5)).admitted).toBe(1);
    advance(2000 - wait.retryAfterMs);
    expect((await limiter.rampTake("q", start, 10_000, 600, 5)).admitted).toBe(1); // floor(2) + 1 - 2
  });

  it("admits at most a quarter of the full rate in the first fifth of the window, everything after it", async () => {
    const { limiter, start, advance } = setup();
    let admitted = 0;
    for (let t = 0; t < 2000; t += 10) {
      admitted += (await limiter.rampTake("q", start, 10_000, 6000, 100)).admitted;
      advance(10);
    }
    // Full rate is 100/s: 200 claims in 2 s; by the last take (t = 1990 ms) the ramp allows
    // floor(0.1·1990²/20000) + 1 = 20, a tenth.
    expect(admitted).toBe(20);
    advance(8000);
    expect((await limiter.rampTake("q", start, 10_000, 6000, 100)).admitted).toBe(100);
  });

  it("refunds claims that found no job, and keeps ramps of different starts apart", async () => {
    const { limiter, start } = setup();
    expect((await limiter.rampTake("q", start, 10_000, 600, 1)).admitted).toBe(1);
    expect((await limiter.rampTake("q", start, 10_000, 600, 1)).admitted).toBe(0);
    await limiter.rampRefund("q", start, 1);
    expect((await limiter.rampTake("q", start, 10_000, 600, 1)).admitted).toBe(1);
    expect((await limiter.rampTake("q", start - 1, 10_000, 600, 1)).admitted).toBe(1);
  });
});

describe.skipIf(!redisAvailable)("ramp (redis)", () => {
  it("counts fleet-wide with Redis time: one claim at the start, then the computed wait", async () => {
    const limiter = newRedisLimiter(randomPrefix());
    const start = Date.now();
    const first = await limiter.rampTake("q", start, 10_000, 600, 5);
    expect(first.admitted).toBe(1);
    const next = await limiter.rampTake("q", start, 10_000, 600, 1);
    expect(next.admitted).toBe(0);
    const ideal = Math.sqrt((2 * 10_000) / 0.01);
    expect(next.retryAfterMs).toBeGreaterThanOrEqual(ideal - 250);
    expect(next.retryAfterMs).toBeLessThanOrEqual(ideal + 250);
    await limiter.rampRefund("q", start, 1);
    expect((await limiter.rampTake("q", start, 10_000, 600, 1)).admitted).toBe(1);
    expect((await limiter.rampTake("q", start - 60_000, 10_000, 600, 7)).admitted).toBe(7);
  });
});
