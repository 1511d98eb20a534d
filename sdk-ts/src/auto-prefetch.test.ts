import { createRouterTransport } from "@connectrpc/connect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { acceptingStreams } from "./fixtures/accepting-streams.js";
import { claimedJobs } from "./fixtures/claimed-jobs.js";
import { seededRandom as random } from "./fixtures/seeded-random.js";
import { ThrottleReason } from "./gen/taskq/v1/job_pb.js";
import { WorkerService } from "./gen/taskq/v1/worker_pb.js";
import { silentLogger } from "./logger.js";
import { STALL_FLOOR_MS } from "./look-ahead.js";
import { Worker } from "./worker.js";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Sleeps `ms`, or less if the job is aborted. */
const work = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

/**
 * A scripted gateway: each poll is answered after a random round trip (0 to `maxRttMs`) with a random
 * number of the jobs it asked for, of queues `a` and `b`; at random polls queue `b` gets a PAUSED or
 * BREAKER_OPEN verdict and no more jobs. Records what each poll said and every settlement.
 */
function scriptedGateway(rand: (n: number) => number, maxRttMs: number) {
  let nextId = 1;
  let bDeclined = false;
  const handedOut = new Map<string, string>(); // id -> queue
  const settled = new Map<string, string[]>(); // id -> outcome cases
  const prefetchSaid: number[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(WorkerService, {
      async *claim(requests) {
        for await (const req of requests) {
          prefetchSaid.push(req.prefetch);
          await pause(rand(maxRttMs + 1));
          if (!bDeclined && rand(8) === 0) {
            bDeclined = true;
            const reason = rand(2) === 0 ? ThrottleReason.PAUSED : ThrottleReason.BREAKER_OPEN;
            yield { throttled: [{ queue: "b", reason }] };
            continue;
          }
          // Mostly full answers (a backlog), sometimes short ones.
          const n = rand(4) === 0 ? rand(req.maxJobs + 1) : req.maxJobs;
          const jobs = claimedJobs(n, nextId, "a").map((j) => ({
            ...j,
            queue: bDeclined || rand(2) === 0 ? "a" : "b",
          }));
          nextId += n;
          for (const j of jobs) handedOut.set(j.id, j.queue);
          yield { jobs };
        }
      },
      ...acceptingStreams((s) => {
        const id = s.lease?.jobId ?? "";
        settled.set(id, [...(settled.get(id) ?? []), s.outcome.case ?? "none"]);
      }),
    });
  });
  return { transport, handedOut, settled, prefetchSaid };
}

interface Run {
  concurrency: number;
  max: number;
  seed: number;
  /** Every job's handler time, ms, from the run's generator. */
  jobMs: (rand: (n: number) => number) => number;
  maxRttMs: number;
  runMs: number;
  graceMs: number;
}

/** One worker with `prefetch: { auto: true, max }` against the scripted gateway, and what it did. */
async function run(r: Run) {
  const rand = random(r.seed);
  const gw = scriptedGateway(rand, r.maxRttMs);
  const started = new Map<string, number>();
  let running = 0;
  let maxRunning = 0;
  let maxHeld = 0;
  let maxBuffered = 0;
  let declinedStarts = 0;
  const worker: Worker = new Worker({
    transport: gw.transport,
    queues: ["a", "b"],
    concurrency: r.concurrency,
    prefetch: { auto: true, max: r.max },
    maxWaitMs: 200,
    pollBatchWaitMs: 0,
    logger: silentLogger,
    handler: async (job) => {
      started.set(job.id, (started.get(job.id) ?? 0) + 1);
      const t = worker.snapshot().throttled;
      if (job.queue === "b" && (t.PAUSED ?? 0) + (t.BREAKER_OPEN ?? 0) > 0) declinedStarts++;
      running++;
      maxRunning = Math.max(maxRunning, running);
      await work(r.jobMs(rand), job.signal);
      running--;
    },
  });
  const sampler = setInterval(() => {
    const s = worker.snapshot();
    maxHeld = Math.max(maxHeld, s.running + s.buffered);
    maxBuffered = Math.max(maxBuffered, s.buffered);
  }, 1);
  await worker.start();
  await pause(r.runMs);
  await worker.stop({ graceMs: r.graceMs });
  clearInterval(sampler);
  return { gw, worker, started, maxRunning, maxHeld, maxBuffered, declinedStarts };
}

/**
 * Every job the worker received was started once or given back once, never both, and settled once.
 * An answer sent as a stop with no grace cancelled the stream never arrived (a real gateway puts its
 * jobs back): those jobs, and only as many as were never received, have no outcome.
 */
function expectEachStartedOrReleased(res: Awaited<ReturnType<typeof run>>): void {
  const unsettled = [...res.gw.handedOut.keys()].filter((id) => !res.gw.settled.has(id));
  expect(unsettled.length).toBe(res.gw.handedOut.size - res.worker.snapshot().claimed);
  for (const [id] of res.gw.handedOut) {
    const outcomes = res.gw.settled.get(id) ?? [];
    if (outcomes.length === 0 && (res.started.get(id) ?? 0) === 0) continue;
    const wasStarted = res.started.get(id) ?? 0;
    const released = outcomes.filter((o) => o === "released").length;
    expect({ id, wasStarted, released, outcomes: outcomes.length }).toEqual(
      wasStarted === 1
        ? { id, wasStarted: 1, released: 0, outcomes: 1 }
        : { id, wasStarted: 0, released: 1, outcomes: 1 },
    );
  }
}

describe("a worker with prefetch auto (scripted gateway, random jobs, round trips, verdicts, stops)", () => {
  it("runs at most concurrency handlers, holds at most concurrency + max, and starts or releases each job once", async () => {
    let buffered = 0;
    let gaveBack = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 1 }),
        async (concurrency, max, seed, graceful) => {
          const res = await run({
            concurrency,
            max,
            seed,
            // Mostly short jobs, a few of up to 2 s: the buffer grows, stalls and is given back.
            jobMs: (rand) => (rand(10) === 0 ? rand(2001) : rand(3)),
            maxRttMs: 4,
            runMs: 250,
            graceMs: graceful ? 2_500 : 0,
          });
          expect(res.maxRunning).toBeLessThanOrEqual(concurrency);
          expect(res.maxHeld).toBeLessThanOrEqual(concurrency + max);
          expect(res.declinedStarts).toBe(0);
          expectEachStartedOrReleased(res);
          expect(res.worker.snapshot()).toMatchObject({ state: "STOPPED", running: 0, buffered: 0 });
          if (res.maxBuffered > 0) buffered++;
          if (res.worker.snapshot().released > 0) gaveBack++;
        },
      ),
      { numRuns: 12 },
    );
    // Not vacuous: the runs did hold jobs ahead, and gave some back.
    expect(buffered).toBeGreaterThan(6);
    expect(gaveBack).toBeGreaterThan(3);
  });

  it("with every job longer than a few round trips, never holds a job ahead", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        async (concurrency, seed) => {
          const res = await run({
            concurrency,
            max: 50,
            seed,
            jobMs: (rand) => 60 + rand(200),
            maxRttMs: 4,
            runMs: 400,
            graceMs: 0,
          });
          expect(res.maxBuffered).toBe(0);
          expect(res.gw.prefetchSaid.every((p) => p === 0)).toBe(true);
          expect(res.maxHeld).toBeLessThanOrEqual(concurrency);
          expectEachStartedOrReleased(res);
        },
      ),
      { numRuns: 8 },
    );
  });
});

describe("a worker with prefetch auto whose jobs turn long", () => {
  it("gives its buffer back once no slot has freed for a few round trips, long before the job ends", async () => {
    let nextId = 1;
    const released: number[] = [];
    let longStartedAt = 0;
    const transport = createRouterTransport(({ service }) => {
      service(WorkerService, {
        async *claim(requests) {
          for await (const req of requests) {
            await pause(1);
            const jobs = claimedJobs(req.maxJobs, nextId);
            nextId += req.maxJobs;
            yield { jobs };
          }
        },
        ...acceptingStreams((s) => {
          if (s.outcome.case === "released") released.push(performance.now());
        }),
      });
    });
    let ran = 0;
    const worker = new Worker({
      transport,
      queues: ["q"],
      concurrency: 1,
      logger: silentLogger,
      handler: async (job) => {
        // 300 quick jobs teach the worker to hold jobs ahead, then one runs for 1.5 s.
        if (++ran === 300) {
          longStartedAt = performance.now();
          await work(1_500, job.signal);
        }
      },
    });
    await worker.start();
    const until = Date.now() + 10_000;
    while (released.length === 0 && Date.now() < until) await pause(5);
    const lookAheadAfter = worker.snapshot().lookAhead;
    await worker.stop({ graceMs: 0 });
    expect(longStartedAt).toBeGreaterThan(0);
    const after = (released[0] ?? Number.POSITIVE_INFINITY) - longStartedAt;
    expect(after).toBeGreaterThanOrEqual(STALL_FLOOR_MS - 1);
    expect(after).toBeLessThan(1_000);
    expect(lookAheadAfter).toBe(0);
  });
});

describe("a worker with prefetch auto, told its queue is PAUSED while it holds jobs ahead", () => {
  it("starts none of them after the verdict and gives them all back", async () => {
    let nextId = 1;
    let blocked = false;
    let verdictSent = false;
    const released = new Map<string, string>(); // id -> reason
    const transport = createRouterTransport(({ service }) => {
      service(WorkerService, {
        async *claim(requests) {
          for await (const req of requests) {
            await pause(2);
            // Once a handler blocks with jobs buffered behind it, the next poll learns of the pause.
            if (blocked && worker.snapshot().buffered > 0 && !verdictSent) {
              verdictSent = true;
              yield { throttled: [{ queue: "q", reason: ThrottleReason.PAUSED }] };
              continue;
            }
            if (verdictSent) {
              await pause(100);
              yield {};
              continue;
            }
            // All it asks for: a backlog, so the worker fills its buffer.
            const n = req.maxJobs;
            const jobs = claimedJobs(n, nextId);
            nextId += n;
            yield { jobs };
          }
        },
        ...acceptingStreams((s) => {
          if (s.outcome.case === "released") released.set(s.lease?.jobId ?? "", s.outcome.value.reason);
        }),
      });
    });
    const started: string[] = [];
    let startsAfterVerdict = 0;
    const worker: Worker = new Worker({
      transport,
      queues: ["q"],
      concurrency: 1,
      pollBatchWaitMs: 0,
      logger: silentLogger,
      handler: async (job) => {
        started.push(job.id);
        if ((worker.snapshot().throttled.PAUSED ?? 0) > 0) startsAfterVerdict++;
        // 300 quick jobs teach it to hold jobs ahead; then one waits until the worker stops.
        if (started.length === 300) {
          blocked = true;
          await work(60_000, job.signal);
        }
      },
    });
    await worker.start();
    const until = Date.now() + 10_000;
    while (released.size === 0 && Date.now() < until) await pause(5);
    await pause(50);
    const buffered = worker.snapshot().buffered;
    await worker.stop({ graceMs: 0 });
    expect(startsAfterVerdict).toBe(0);
    expect(started).toHaveLength(300);
    expect(buffered).toBe(0);
    // Every job handed out and not started went back, for the pause.
    expect(released.size).toBe(nextId - 1 - 300);
    expect(released.size).toBeGreaterThan(0);
    expect(new Set(released.values())).toEqual(new Set(["queue PAUSED"]));
  });
});
