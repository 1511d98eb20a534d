import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { claimedJobs } from "./fixtures/claimed-jobs.js";
import { SettleStatus, WorkerService } from "./gen/taskq/v1/worker_pb.js";
import { Worker } from "./worker.js";

/**
 * A scripted gateway (an in-process Connect router) with a backlog of `backlog` jobs, that records
 * where each settlement arrived: on a poll or on the Settle stream. `onPolls` says whether it applies a
 * poll's settlements (a gateway that predates them ignores the field); `failPoll` fails the stream at
 * the poll with that number, before applying anything.
 */
function scriptedGateway(backlog: number, opts: { onPolls: boolean; failPoll?: number }) {
  let next = 1;
  const seen = { polls: 0, carrying: 0, onPoll: [] as string[], onStream: [] as string[] };
  const lease = (s: { lease?: { jobId: string; attempt: number } }) => ({
    jobId: s.lease?.jobId ?? "",
    attempt: s.lease?.attempt ?? 0,
  });
  const transport = createRouterTransport(({ service }) => {
    service(WorkerService, {
      async *claim(requests) {
        for await (const req of requests) {
          seen.polls++;
          if (req.settlements.length > 0) seen.carrying++;
          if (seen.polls === opts.failPoll) throw new ConnectError("gateway restarting", Code.Unavailable);
          const settled = opts.onPolls ? req.settlements : [];
          for (const s of settled) seen.onPoll.push(lease(s).jobId);
          const n = Math.min(req.maxJobs, backlog - next + 1);
          const jobs = claimedJobs(n, next, req.queues[0]);
          next += n;
          yield {
            jobs,
            settleResults: settled.map((s) => ({ lease: lease(s), status: SettleStatus.ACCEPTED })),
          };
          // Nothing left: a real gateway parks the next poll; a short one keeps the test quick.
          if (n === 0) await new Promise((r) => setTimeout(r, 20));
        }
      },
      async *settle(requests) {
        for await (const req of requests) {
          for (const s of req.settlements) seen.onStream.push(lease(s).jobId);
          yield { results: req.settlements.map((s) => ({ lease: lease(s), status: SettleStatus.ACCEPTED })) };
        }
      },
      async *heartbeat(requests) {
        for await (const req of requests) yield { leases: req.leases.map((l) => ({ lease: l })) };
      },
    });
  });
  return { transport, seen };
}

async function drain(transport: ReturnType<typeof createRouterTransport>, jobs: number) {
  const worker = new Worker({
    baseUrl: "http://unused",
    transport,
    queues: ["q"],
    concurrency: 10,
    // One poll per batch of freed slots, so each carries the settles of the batch before it.
    prefetch: 0,
    maxWaitMs: 1000,
    reconnect: { initialMs: 1, maxMs: 5 },
    handler: async () => {},
  });
  await worker.start();
  const end = Date.now() + 10_000;
  while (worker.snapshot().succeeded < jobs && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  await worker.stop({ graceMs: 1000 });
  return worker.snapshot();
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => String(i + 1));
const sorted = (xs: string[]) => [...xs].sort((a, b) => Number(a) - Number(b));

describe("settlements on the next poll", () => {
  it("ride on the polls while work is queued; every job is settled once", async () => {
    const { transport, seen } = scriptedGateway(200, { onPolls: true });
    const s = await drain(transport, 200);
    expect(s).toMatchObject({ succeeded: 200, settleRefused: 0 });
    expect(sorted([...seen.onPoll, ...seen.onStream])).toEqual(ids(200));
    // Every full answer is followed by a poll carrying what its jobs came to.
    expect(seen.onPoll.length).toBeGreaterThanOrEqual(150);
  });

  it("go by the Settle stream when the gateway answers none of them (one that predates them)", async () => {
    const { transport, seen } = scriptedGateway(200, { onPolls: false });
    const s = await drain(transport, 200);
    expect(s).toMatchObject({ succeeded: 200, settleRefused: 0 });
    expect(sorted(seen.onStream)).toEqual(ids(200));
    // The first unanswered carry tells the worker; it carries no more.
    expect(seen.carrying).toBe(1);
  });

  it("are sent again when the poll carrying them fails", async () => {
    const { transport, seen } = scriptedGateway(200, { onPolls: true, failPoll: 4 });
    const s = await drain(transport, 200);
    expect(s).toMatchObject({ succeeded: 200, settleRefused: 0 });
    expect(sorted([...seen.onPoll, ...seen.onStream])).toEqual(ids(200));
    expect(s.claimErrors).toBe(1);
  });
});
