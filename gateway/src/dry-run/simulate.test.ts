import { describe, expect, it } from "vitest";
import { compare } from "./compare.js";
import { type ReplayJob, type ReplayLimits, replay } from "./simulate.js";

const open: ReplayLimits = {
  maxRunning: null,
  throttle: null,
  claimRate: null,
  flowLimits: new Map(),
  workers: null,
  adaptive: null,
};

function job(readyMs: number, runMs = 100, more: Partial<ReplayJob> = {}): ReplayJob {
  return { readyMs, runMs, priority: 0, flowKey: null, failed: false, ...more };
}

const starts = (jobs: ReplayJob[], limits: Partial<ReplayLimits>, runningUntilMs: number[] = []) => [
  ...replay({ jobs, runningUntilMs }, { ...open, ...limits }).startMs,
];

describe("replay", () => {
  it("starts every job when ready with no limit", () => {
    expect(starts([job(0), job(5), job(5)], {})).toEqual([0, 5, 5]);
  });

  it("holds jobs beyond max_running until a running one finishes", () => {
    expect(starts([job(0), job(0), job(0), job(0), job(350)], { maxRunning: 2 })).toEqual([
      0, 0, 100, 100, 350,
    ]);
  });

  it("counts jobs running at the window's start against the cap", () => {
    expect(starts([job(0), job(0)], { maxRunning: 2 }, [250])).toEqual([0, 100]);
  });

  it("frees a place only once its job has finished, at a flow key's token between two milliseconds too", () => {
    // Key x: 180 a minute, its second token at 333.33 ms. Then the cap of 2 is held by the first job
    // (until 334) and the last (from 333): the key's job waits for the first to end.
    const jobs = [
      job(0, 334),
      job(0, 10, { flowKey: "x" }),
      job(0, 1000, { flowKey: "x" }),
      job(200),
      job(333),
    ];
    const flowLimits = new Map([["x", { ratePerMinute: 180, burst: 1 }]]);
    expect(starts(jobs, { maxRunning: 2, flowLimits })).toEqual([0, 0, 334, 200, 333]);
  });

  it("caps at the workers' concurrency too, the lower of the two", () => {
    expect(starts([job(0), job(0), job(0)], { maxRunning: 5, workers: 1 })).toEqual([0, 100, 200]);
  });

  it("spaces a throttle's claims one interval apart, and an idle queue's first claim goes at once", () => {
    // 2 per 1000 ms: one claim per 500 ms.
    const jobs = [job(0, 1), job(0, 1), job(0, 1), job(5000, 1)];
    expect(starts(jobs, { throttle: { limit: 2, periodMs: 1000 } })).toEqual([0, 500, 1000, 5000]);
  });

  it("admits a claim rate's burst at once, then one per emission interval", () => {
    const jobs = [job(0, 1), job(0, 1), job(0, 1), job(0, 1)];
    expect(starts(jobs, { claimRate: { ratePerMinute: 60, burst: 2 } })).toEqual([0, 0, 1000, 2000]);
  });

  it("holds back only the jobs of a flow key out of tokens (no head-of-line blocking)", () => {
    const jobs = [job(0, 1, { flowKey: "a" }), job(0, 1, { flowKey: "a" }), job(0, 1, { flowKey: "b" })];
    const flowLimits = new Map([["a", { ratePerMinute: 60, burst: 1 }]]);
    expect(starts(jobs, { flowLimits })).toEqual([0, 1000, 0]);
  });

  it("starts the highest priority waiting job first, then the oldest", () => {
    const jobs = [job(0), job(10), job(20, 100, { priority: 5 }), job(30)];
    expect(starts(jobs, { maxRunning: 1 })).toEqual([0, 200, 100, 300]);
  });

  it("reports the most jobs waiting at once", () => {
    const r = replay(
      { jobs: [job(0), job(0), job(0), job(0)], runningUntilMs: [] },
      { ...open, maxRunning: 1 },
    );
    expect(r.peakBacklog).toBe(3);
    expect(r.peakBacklogAtMs).toBe(0);
  });

  it("replays 200,000 jobs under flow-key limits in a few seconds", () => {
    const jobs = Array.from({ length: 200_000 }, (_, i) =>
      job(i * 18, 50 + (i % 7) * 10, { flowKey: `k${i % 50}`, priority: i % 3 }),
    );
    const flowLimits = new Map([["k1", { ratePerMinute: 600, burst: 5 }]]);
    const t0 = performance.now();
    const r = replay(
      { jobs, runningUntilMs: [] },
      { ...open, maxRunning: 4, claimRate: { ratePerMinute: 3000, burst: 10 }, flowLimits },
    );
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(r.startMs.every((s, i) => s >= (jobs[i] as ReplayJob).readyMs)).toBe(true);
  });
});

describe("compare", () => {
  it("counts the jobs a lower cap delays, by how much, and the backlog under each", () => {
    // Ten jobs at once, 100 ms each: a cap of 5 runs them in two rounds.
    const jobs = Array.from({ length: 10 }, () => job(0));
    const c = compare(
      { jobs, runningUntilMs: [] },
      open,
      { ...open, maxRunning: 5 },
      {
        minDelayMs: 1,
        endMs: 1000,
      },
    );
    expect(c.delayed).toBe(5);
    expect(c.sooner).toBe(0);
    expect(c.longestExtraWaitMs).toBe(100);
    expect(c.current.peakBacklog).toBe(0);
    expect(c.proposed.peakBacklog).toBe(5);
    expect(c.proposed.maxWaitMs).toBe(100);
    expect(c.proposed.meanWaitMs).toBe(50);
  });

  it("counts only what the change adds: waits both replays share are not delays", () => {
    const jobs = Array.from({ length: 10 }, () => job(0));
    const c = compare(
      { jobs, runningUntilMs: [] },
      { ...open, workers: 5 },
      { ...open, workers: 5, maxRunning: 8 },
      { minDelayMs: 1, endMs: 1000 },
    );
    expect(c.delayed).toBe(0);
    expect(c.current.peakBacklog).toBe(5);
  });

  it("counts jobs a raised limit starts sooner, and those past the window's end", () => {
    const jobs = Array.from({ length: 4 }, () => job(0, 1000));
    const c = compare(
      { jobs, runningUntilMs: [] },
      { ...open, maxRunning: 1 },
      { ...open, maxRunning: 4 },
      { minDelayMs: 500, endMs: 1500 },
    );
    expect(c.sooner).toBe(3);
    expect(c.delayed).toBe(0);
    expect(c.current.notStartedByEnd).toBe(2);
    expect(c.proposed.notStartedByEnd).toBe(0);
  });

  it("ignores a delay shorter than minDelayMs", () => {
    const jobs = [job(0, 1), job(0, 1)];
    const c = compare(
      { jobs, runningUntilMs: [] },
      open,
      { ...open, throttle: { limit: 10, periodMs: 1000 } },
      {
        minDelayMs: 200,
        endMs: 1000,
      },
    );
    expect(c.delayed).toBe(0);
    expect(c.longestExtraWaitMs).toBe(100);
  });
});

describe("replay with an adaptive max_running", () => {
  const adaptive = { min: 1, max: 50, targetMs: 150 };
  /** Starts per 1 s second of the replay: how far the limit let the queue go. */
  const perSecond = (jobs: ReplayJob[]) => {
    const s = starts(jobs, { adaptive });
    return [0, 1, 2, 3].map((k) => s.filter((t) => t >= k * 1000 && t < (k + 1) * 1000).length);
  };
  const backlog = (runMs: number, failed = false) =>
    Array.from({ length: 400 }, () => job(0, runMs, { failed }));

  it("starts at min and grows in slow start while the jobs run under the target", () => {
    const fast = perSecond(backlog(100));
    expect(fast[0]).toBeGreaterThanOrEqual(10); // at 1 in flight it would be 10 a second
    expect(fast[1] ?? 0).toBeGreaterThan(fast[0] ?? 0);
  });

  it("stays at min when the jobs run over the target, or fail", () => {
    expect(perSecond(backlog(200))).toEqual([5, 5, 5, 5]);
    expect(perSecond(backlog(100, true))).toEqual([10, 10, 10, 10]);
  });
});
