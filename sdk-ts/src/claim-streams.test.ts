import { createRouterTransport } from "@connectrpc/connect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { claimedJobs } from "./fixtures/claimed-jobs.js";
import {
  type HeartbeatRequest,
  type SettleRequest,
  SettleStatus,
  WorkerService,
} from "./gen/taskq/v1/worker_pb.js";
import { Worker } from "./worker.js";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A scripted gateway's Settle (every settle accepted, each answer after `delayMs()`) and Heartbeat. */
function acceptSettlesAndHeartbeats(delayMs: () => number) {
  return {
    async *settle(requests: AsyncIterable<SettleRequest>) {
      for await (const req of requests) {
        await pause(delayMs());
        yield { results: req.settlements.map((s) => ({ lease: s.lease, status: SettleStatus.ACCEPTED })) };
      }
    },
    async *heartbeat(requests: AsyncIterable<HeartbeatRequest>) {
      for await (const req of requests) yield { leases: req.leases.map((lease) => ({ lease })) };
    },
  };
}

/**
 * A scripted gateway (an in-process Connect router: the Worker talks real Connect to it) that answers
 * each poll after a random delay with a random number of jobs up to max_jobs, and records what the
 * worker asked for against what it still held.
 */
function scriptedGateway(rand: () => number, concurrency: number) {
  let nextId = 1;
  let handedOut = 0;
  let outstandingAsk = 0;
  const seen = { maxAskedPlusHeld: 0, polls: 0, overlapping: 0, handlersDone: 0, emptyAsks: 0 };
  const transport = createRouterTransport(({ service }) => {
    service(WorkerService, {
      async *claim(requests) {
        for await (const req of requests) {
          seen.polls++;
          if (req.maxJobs < 1) seen.emptyAsks++;
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
      ...acceptSettlesAndHeartbeats(() => Math.floor(rand() * 4)),
    });
  });
  return { transport, seen, concurrency };
}

/**
 * A scripted gateway whose polls wait until the test answers them (as polls park at a gateway with no
 * ready jobs): `outstanding` holds each unanswered poll's max_jobs and its answer.
 */
function parkingGateway() {
  let nextId = 1;
  const outstanding: Array<{ maxJobs: number; answer: (n: number) => void }> = [];
  const transport = createRouterTransport(({ service }) => {
    service(WorkerService, {
      async *claim(requests) {
        for await (const req of requests) {
          const n = await new Promise<number>((answer) => outstanding.push({ maxJobs: req.maxJobs, answer }));
          const jobs = claimedJobs(n, nextId, req.queues[0]);
          nextId += n;
          yield { jobs };
        }
      },
      ...acceptSettlesAndHeartbeats(() => 0),
    });
  });
  /** Stops the worker, answering its parked polls with no jobs as a gateway does on a half-close. */
  const stop = async (worker: Worker) => {
    let stopped = false;
    const stopping = worker.stop({ graceMs: 0 }).then(() => {
      stopped = true;
    });
    while (!stopped) {
      for (const poll of outstanding.splice(0)) poll.answer(0);
      await pause(2);
    }
    await stopping;
  };
  /** Answers the oldest unanswered poll with `n` jobs. */
  const answerOldest = (n: number) => {
    const poll = outstanding.shift();
    if (!poll) throw new Error("no poll is out");
    poll.answer(n);
  };
  return { transport, outstanding, answerOldest, stop };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(2);
  }
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
          // The gateway refuses max_jobs 0 (the stream would fail and reconnect).
          expect(gw.seen.emptyAsks).toBe(0);
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

  it("claims slots that free together in one poll, not one per stream", async () => {
    const concurrency = 8;
    const gw = parkingGateway();
    // Each round's jobs finish together: they wait until all of the round are running.
    let running = 0;
    let release = () => {};
    let roundDone = new Promise<void>((r) => {
      release = r;
    });
    const worker = new Worker({
      transport: gw.transport,
      queues: ["q"],
      concurrency,
      claimStreams: 2,
      maxWaitMs: 0,
      handler: async () => {
        if (++running === concurrency) {
          running = 0;
          const done = release;
          roundDone = new Promise<void>((r) => {
            release = r;
          });
          done();
          return;
        }
        await roundDone;
      },
    });
    await worker.start();
    for (let round = 0; round < 5; round++) {
      await until(() => gw.outstanding.length > 0, "a poll");
      await pause(5);
      // One poll is out, for every slot; the other stream has none to ask for.
      expect(gw.outstanding.map((p) => p.maxJobs)).toEqual([concurrency]);
      gw.answerOldest(concurrency);
    }
    await until(() => worker.snapshot().succeeded >= 5 * concurrency, "the jobs to finish");
    await until(() => gw.outstanding.length > 0, "the next poll");
    await gw.stop(worker);
  });

  it("keeps a second poll parked while the first is answered, for the next enqueue", async () => {
    const gw = parkingGateway();
    const worker = new Worker({
      transport: gw.transport,
      queues: ["q"],
      concurrency: 8,
      claimStreams: 2,
      maxWaitMs: 30_000,
      handler: async () => {},
    });
    await worker.start();
    await until(() => gw.outstanding.length === 1, "the first poll");
    // An enqueue hands the parked poll one job; its stream polls again, and once the job is done the
    // other stream parks a poll of its own beside it.
    for (let i = 1; i <= 3; i++) {
      gw.answerOldest(1);
      await until(() => worker.snapshot().succeeded >= i && gw.outstanding.length === 2, "two parked polls");
      expect(gw.outstanding.reduce((sum, p) => sum + p.maxJobs, 0)).toBeLessThanOrEqual(8);
    }
    await gw.stop(worker);
  });
});
