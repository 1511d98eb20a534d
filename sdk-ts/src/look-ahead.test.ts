import { describe, expect, it } from "vitest";
import {
  AdaptiveLookAhead,
  defaultLookAheadMax,
  fixedLookAhead,
  LONG_JOB_ROUND_TRIPS,
  lookAheadFor,
  STALL_FLOOR_MS,
} from "./look-ahead.js";

describe("the adaptive look-ahead", () => {
  it("holds nothing until it has measured both a job and a poll", () => {
    const l = new AdaptiveLookAhead(10, 500);
    expect(l.size()).toBe(0);
    l.ran(1);
    expect(l.size()).toBe(0);
    l.polled(2);
    expect(l.size()).toBeGreaterThan(0);
  });

  it("holds what its slots start within one round trip: concurrency × round trip / job", () => {
    const l = new AdaptiveLookAhead(10, 500);
    l.ran(2);
    l.polled(1);
    expect(l.size()).toBe(5); // 10 slots each start a 2 ms job every 2 ms: 5 in one 1 ms round trip
    const one = new AdaptiveLookAhead(1, 500);
    one.ran(0.1);
    one.polled(1);
    expect(one.size()).toBe(10);
  });

  it("holds nothing for jobs longer than a few round trips, and something just below", () => {
    const long = new AdaptiveLookAhead(50, 500);
    long.polled(1);
    long.ran(LONG_JOB_ROUND_TRIPS + 0.5);
    expect(long.size()).toBe(0);
    const near = new AdaptiveLookAhead(50, 500);
    near.polled(1);
    near.ran(LONG_JOB_ROUND_TRIPS - 0.5);
    expect(near.size()).toBe(Math.ceil(50 / (LONG_JOB_ROUND_TRIPS - 0.5)));
  });

  it("never exceeds its max, however short the jobs", () => {
    const l = new AdaptiveLookAhead(50, 500);
    l.polled(5);
    l.ran(0);
    expect(l.size()).toBe(500);
  });

  it("smooths: one long job among short ones shrinks the buffer for a while, short ones bring it back", () => {
    const l = new AdaptiveLookAhead(10, 1000);
    l.polled(1);
    for (let i = 0; i < 50; i++) l.ran(0.5);
    const before = l.size();
    l.ran(1000);
    expect(l.size()).toBe(0);
    for (let i = 0; i < 200; i++) l.ran(0.5);
    expect(l.size()).toBe(before);
  });

  it("gives the buffer back after a stall of a few round trips (never under the floor), and then holds none", () => {
    const l = new AdaptiveLookAhead(4, 500);
    expect(l.stalled(10_000)).toBe(false); // no round trip measured: nothing to judge by
    l.polled(1);
    l.ran(0.2);
    expect(l.size()).toBe(20);
    expect(l.stalled(STALL_FLOOR_MS - 1)).toBe(false);
    expect(l.size()).toBe(20);
    expect(l.stalled(STALL_FLOOR_MS)).toBe(true);
    expect(l.size()).toBe(0);
    const slow = new AdaptiveLookAhead(4, 500);
    slow.polled(10);
    slow.ran(0.2);
    expect(slow.stalled(LONG_JOB_ROUND_TRIPS * 10 - 1)).toBe(false);
    expect(slow.stalled(LONG_JOB_ROUND_TRIPS * 10)).toBe(true);
  });

  it("after a stall holds none while the long jobs run, however slow the polls turn, until one ends", () => {
    const l = new AdaptiveLookAhead(1, 500);
    l.polled(1);
    l.ran(0.2);
    expect(l.stalled(STALL_FLOOR_MS)).toBe(true);
    // Polls slowed by a busy machine would put the stall inside a few round trips again.
    for (let i = 0; i < 50; i++) l.polled(50);
    expect(l.size()).toBe(0);
    l.ran(1); // a job ended: measurements decide again
    expect(l.size()).toBeGreaterThan(0);
  });
});

describe("the prefetch option", () => {
  it("is adaptive by default and with { auto: true }, capped by max or 10 × concurrency (500 to 1000)", () => {
    expect(lookAheadFor(undefined, 4).adaptive).toBe(true);
    expect(lookAheadFor("auto", 4).adaptive).toBe(true);
    expect([1, 50, 200].map(defaultLookAheadMax)).toEqual([500, 500, 1000]);
    const capped = lookAheadFor({ auto: true, max: 3 }, 4);
    capped.polled(10);
    capped.ran(0);
    expect(capped.size()).toBe(3);
  });

  it("N holds exactly N whatever it measures", () => {
    const l = lookAheadFor(7, 4);
    l.polled(1);
    l.ran(10_000);
    expect(l.stalled(10_000)).toBe(false);
    expect([l.adaptive, l.size()]).toEqual([false, 7]);
    expect(fixedLookAhead(0).size()).toBe(0);
  });
});
