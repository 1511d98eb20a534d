import { createRouterTransport } from "@connectrpc/connect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { claimedJobs } from "./fixtures/claimed-jobs.js";
import { seededRandom as random } from "./fixtures/seeded-random.js";
import { ThrottleReason } from "./gen/taskq/v1/job_pb.js";
import { SettleStatus, WorkerService } from "./gen/taskq/v1/worker_pb.js";
import { silentLogger } from "./logger.js";
import { Worker } from "./worker.js";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A scripted gateway for one run: each poll is answered after a random delay with a random number of
 * the jobs it asked for, from queues `a` and `b`; at a random poll, queue `b` pauses for good (a PAUSED
 * verdict, and no more `b` jobs). It records every job it handed out and every settlement it got.
 */
function scriptedGateway(rand: (n: number) => number) {
  let nextId = 1;
  let bPaused = false;
  const handedOut = new Map<string, string>(); // id -> queue
  const settled = new Map<string, string[]>(); // id -> outcome cases, in order
  const transport = createRouterTransport(({ service }) => {
    service(WorkerService, {
      async *claim(requests) {
        for await (const req of requests) {
          await pause(rand(4));
          if (!bPaused && rand(6) === 0) {
            bPaused = true;
            yield { throttled: [{ queue: "b", reason: ThrottleReason.PAUSED }] };
            continue;
          }
          const n = rand(req.maxJobs + 1);
          const jobs = Array.from({ length: n }, () => {
            const queue = bPaused || rand(2) === 0 ? "a" : "b";
            const [job] = claimedJobs(1, nextId++, queue);
            if (job) handedOut.set(job.id, queue);
            return job;
          }).filter((j) => j !== undefined);
          yield { jobs };
        }
      },
      async *settle(requests) {
        for await (const req of requests) {
          await pause(rand(3));
          for (const s of req.settlements) {
            const id = s.lease?.jobId ?? "";
            settled.set(id, [...(settled.get(id) ?? []), s.outcome.case ?? "none"]);
          }
          yield { results: req.settlements.map((s) => ({ lease: s.lease, status: SettleStatus.ACCEPTED })) };
        }
      },
      async *heartbeat(requests) {
        for await (const req of requests) yield { leases: req.leases.map((lease) => ({ lease })) };
      },
    });
  });
  return { transport, handedOut, settled };
}

describe("a worker with prefetch (scripted gateway, random answers and timings)", () => {
  it("runs at most `concurrency` handlers, holds at most `concurrency + prefetch` jobs, and starts or releases each held job exactly once", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        async (concurrency, prefetch, seed) => {
          const rand = random(seed);
          const gw = scriptedGateway(rand);
          const started = new Map<string, number>(); // id -> times started
          let running = 0;
          let maxRunning = 0;
          let maxHeld = 0;
          let pausedStarts = 0;
          const worker: Worker = new Worker({
            transport: gw.transport,
            queues: ["a", "b"],
            concurrency,
            prefetch,
            pollBatchWaitMs: 0,
            logger: silentLogger,
            handler: async (job) => {
              started.set(job.id, (started.get(job.id) ?? 0) + 1);
              // Once the worker has seen the PAUSED verdict, no job of `b` may start.
              if (job.queue === "b" && (worker.snapshot().throttled.PAUSED ?? 0) > 0) pausedStarts++;
              running++;
              maxRunning = Math.max(maxRunning, running);
              await pause(rand(5));
              running--;
            },
          });
          const held = setInterval(() => {
            const s = worker.snapshot();
            maxHeld = Math.max(maxHeld, s.running + s.buffered);
          }, 1);
          await worker.start();
          const until = Date.now() + 150;
          while (Date.now() < until && gw.handedOut.size < 40) await pause(5);
          await worker.stop({ graceMs: 2_000 });
          clearInterval(held);

          expect(maxRunning).toBeLessThanOrEqual(concurrency);
          expect(maxHeld).toBeLessThanOrEqual(concurrency + prefetch);
          expect(pausedStarts).toBe(0);
          for (const [id] of gw.handedOut) {
            const outcomes = gw.settled.get(id) ?? [];
            const wasStarted = started.get(id) ?? 0;
            const released = outcomes.filter((o) => o === "released").length;
            // Every job handed out was either started once (and settled success) or released once.
            expect({ id, wasStarted, released, outcomes: outcomes.length }).toEqual(
              wasStarted === 1
                ? { id, wasStarted: 1, released: 0, outcomes: 1 }
                : { id, wasStarted: 0, released: 1, outcomes: 1 },
            );
          }
          if (prefetch === 0) expect([...gw.settled.values()].flat()).not.toContain("released");
          expect(worker.snapshot()).toMatchObject({ state: "STOPPED", running: 0, buffered: 0 });
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe("a worker with prefetch, given jobs and their queue's PAUSED verdict in one answer", () => {
  it("starts none of them and gives them all back", async () => {
    const settled: string[] = [];
    let polls = 0;
    const transport = createRouterTransport(({ service }) => {
      service(WorkerService, {
        async *claim(requests) {
          for await (const req of requests) {
            if (polls++ > 0) await pause(200);
            yield polls === 1
              ? {
                  jobs: claimedJobs(req.maxJobs, 1, "a"),
                  throttled: [{ queue: "a", reason: ThrottleReason.PAUSED }],
                }
              : {};
          }
        },
        async *settle(requests) {
          for await (const req of requests) {
            for (const s of req.settlements) settled.push(`${s.lease?.jobId} ${s.outcome.case}`);
            yield {
              results: req.settlements.map((s) => ({ lease: s.lease, status: SettleStatus.ACCEPTED })),
            };
          }
        },
        async *heartbeat(requests) {
          for await (const req of requests) yield { leases: req.leases.map((lease) => ({ lease })) };
        },
      });
    });
    let started = 0;
    const worker = new Worker({
      transport,
      queues: ["a"],
      concurrency: 1,
      prefetch: 2,
      logger: silentLogger,
      handler: async () => {
        started++;
      },
    });
    await worker.start();
    const until = Date.now() + 5_000;
    while (worker.snapshot().released < 3 && Date.now() < until) await pause(5);
    await worker.stop();
    expect(started).toBe(0);
    expect(settled.sort()).toEqual(["1 released", "2 released", "3 released"]);
  });
});
