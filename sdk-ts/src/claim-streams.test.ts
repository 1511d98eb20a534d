import { createRouterTransport } from "@connectrpc/connect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { claimedJobs } from "./fixtures/claimed-jobs.js";
import { SettleStatus, WorkerService } from "./gen/taskq/v1/worker_pb.js";
import { Worker } from "./worker.js";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A scripted gateway (an in-process Connect router: the Worker talks real Connect to it) that answers
 * each poll after a random delay with a random number of jobs up to max_jobs, and records what the
 * worker asked for against what it still held.
 */
function scriptedGateway(rand: () => number, concurrency: number) {
  let nextId = 1;
  let handedOut = 0;
  let outstandingAsk = 0;
  const seen = { maxAskedPlusHeld: 0, polls: 0, overlapping: 0, handlersDone: 0 };
  const transport = createRouterTransport(({ service }) => {
    service(WorkerService, {
      async *claim(requests) {
        for await (const req of requests) {
          seen.polls++;
          if (outstandingAsk > 0) seen.overlapping++;
          outstandingAsk += req.maxJobs;
          // What this worker holds: jobs handed out whose handler has not returned yet.
          const held = handedOut - seen.handlersDone;
          seen.maxAskedPlusHeld = Math.max(seen.maxAskedPlusHeld, outstandingAsk + held);
          await pause(Math.floor(rand() * 4));
          const n = Math.floor(rand() * (req.maxJobs + 1));
          outstandingAsk -= req.maxJobs;
          handedOut += n;
          const jobs = claimedJobs(n, nextId, req.queues[0]);
          nextId += n;
          yield { jobs };
        }
      },
      async *settle(requests) {
        for await (const req of requests) {
          await pause(Math.floor(rand() * 4));
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
  return { transport, seen, concurrency };
}

describe("ClaimStreams", () => {
  it("never asks for more jobs than free slots nor runs more than concurrency, with several polls out", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer(),
        async (concurrency, claimStreams, seed) => {
          let state = seed >>> 0 || 1;
          const rand = () => {
            // xorshift32: reproducible per seed, so a failure shrinks to one timing.
            state ^= state << 13;
            state ^= state >>> 17;
            state ^= state << 5;
            return (state >>> 0) / 2 ** 32;
          };
          const gw = scriptedGateway(rand, concurrency);
          let running = 0;
          let maxRunning = 0;
          const worker = new Worker({
            transport: gw.transport,
            queues: ["q"],
            concurrency,
            claimStreams,
            maxWaitMs: 0,
            handler: async () => {
              running++;
              maxRunning = Math.max(maxRunning, running);
              await pause(Math.floor(rand() * 3));
              running--;
              gw.seen.handlersDone++;
            },
          });
          await worker.start();
          while (worker.snapshot().succeeded < 40) await pause(5);
          await worker.stop({ graceMs: 1000 });
          expect(maxRunning).toBeLessThanOrEqual(concurrency);
          expect(gw.seen.maxAskedPlusHeld).toBeLessThanOrEqual(concurrency);
          return true;
        },
      ),
      { numRuns: 25 },
    );
  });

  it("keeps two polls out at once when the slots allow", async () => {
    const gw = scriptedGateway(() => 0.5, 8);
    const worker = new Worker({
      transport: gw.transport,
      queues: ["q"],
      concurrency: 8,
      claimStreams: 2,
      maxWaitMs: 0,
      handler: async () => {
        await pause(2);
        gw.seen.handlersDone++;
      },
    });
    await worker.start();
    while (worker.snapshot().succeeded < 40) await pause(5);
    await worker.stop({ graceMs: 1000 });
    expect(gw.seen.overlapping).toBeGreaterThan(0);
  });
});
