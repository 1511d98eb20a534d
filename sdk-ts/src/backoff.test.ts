import { describe, expect, it } from "vitest";
import { Backoff } from "./backoff.js";

describe("Backoff", () => {
  it("grows by the multiplier and caps at maxMs without jitter", () => {
    const b = new Backoff({ initialMs: 100, maxMs: 1000, multiplier: 2, jitter: 0 });
    expect([1, 2, 3, 4, 5, 6].map(() => b.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("keeps jittered delays within ±jitter of the base and never above maxMs", () => {
    const lo = new Backoff({ initialMs: 100, maxMs: 1000, multiplier: 2, jitter: 0.2 }, () => 0);
    const hi = new Backoff({ initialMs: 100, maxMs: 1000, multiplier: 2, jitter: 0.2 }, () => 0.999999);
    expect([lo.next(), lo.next(), lo.next(), lo.next(), lo.next()]).toEqual([80, 160, 320, 640, 800]);
    expect([hi.next(), hi.next(), hi.next(), hi.next(), hi.next()]).toEqual([120, 240, 480, 960, 1000]);
  });

  it("spreads delays with real randomness", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 50; i++) {
      const d = new Backoff({ initialMs: 1000, jitter: 0.2 }).next();
      expect(d).toBeGreaterThanOrEqual(800);
      expect(d).toBeLessThanOrEqual(1200);
      seen.add(d);
    }
    expect(seen.size).toBeGreaterThan(5);
  });

  it("starts over from initialMs after reset", () => {
    const b = new Backoff({ initialMs: 50, maxMs: 10_000, multiplier: 3, jitter: 0 });
    b.next();
    b.next();
    expect(b.next()).toBe(450);
    b.reset();
    expect(b.next()).toBe(50);
  });

  it("uses the documented defaults: 100 ms, ×2, capped at 4 s", () => {
    const b = new Backoff({ jitter: 0 });
    const delays = Array.from({ length: 10 }, () => b.next());
    expect(delays.slice(0, 3)).toEqual([100, 200, 400]);
    expect(delays.at(-1)).toBe(4_000);
  });
});
