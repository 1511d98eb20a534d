import type { Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "./client.js";
import { NonRetryableError } from "./errors.js";
import { JobState } from "./gen/taskq/v1/job_pb.js";
import { JobAbortError, type JobContext } from "./job-context.js";
import { Worker, type WorkerOptions } from "./worker.js";

// One real gateway (embedded PGlite) for this file, no mocks; every test uses its own queues. A short
// retry backoff and maintenance tick keep retry and lease-expiry tests quick.
let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway({ config: { retryBaseMs: 10, maintenanceIntervalMs: 50 } });
});
afterAll(() => gateway.stop());

function setup() {
  const client = new Client({ baseUrl: gateway.grpcUrl });
  const workers: Worker[] = [];
  const worker = (opts: Omit<WorkerOptions, "baseUrl">) => {
    const w = new Worker({ baseUrl: gateway.grpcUrl, maxWaitMs: 2000, ...opts });
    workers.push(w);
    return w;
  };
  const teardown = async () => {
    await Promise.all(workers.map((w) => w.stop({ graceMs: 0 })));
  };
  return { client, worker, teardown };
}

async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("timed out waiting for condition");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("Worker against a real gateway", () => {
  it("processes 200 jobs exactly once", async () => {
    const { client, worker, teardown } = setup();
    try {
      const seen = new Map<number, number>();
      const w = worker({
        queues: ["bulk"],
        concurrency: 16,
        prefetch: 0,
        handler: async (job) => {
          const { n } = job.json<{ n: number }>();
          seen.set(n, (seen.get(n) ?? 0) + 1);
          return { doubled: n * 2 };
        },
      });
      await w.start();
      const ids = [
        ...(await client.enqueueBatch(
          Array.from({ length: 100 }, (_, n) => ({ queue: "bulk", payload: { n } })),
        )),
        ...(await client.enqueueBatch(
          Array.from({ length: 100 }, (_, i) => ({ queue: "bulk", payload: { n: i + 100 } })),
        )),
      ];
      expect(ids).toHaveLength(200);
      await until(() => w.snapshot().succeeded === 200);
      expect(seen.size).toBe(200);
      expect([...seen.values()].every((c) => c === 1)).toBe(true);
      const info = await client.getJob(ids[7]?.jobId ?? "");
      expect(JSON.parse(new TextDecoder().decode(info.result))).toEqual({ doubled: 14 });
      const s = w.snapshot();
      expect(s).toMatchObject({ claimed: 200, failed: 0, settleRefused: 0, running: 0, claimErrors: 0 });
      // A poll asks for at most the free slots, so 200 jobs took at least 200 / 16 polls.
      expect(s.polls).toBeGreaterThanOrEqual(Math.ceil(200 / 16));
    } finally {
      await teardown();
    }
  });

  it("settles a backlog's jobs on its next polls, not on the Settle stream", async () => {
    const { client, teardown } = setup();
    // Counts the settlements each stream carries, on the wire as the gateway receives them.
    const sent = { onPolls: 0, onSettle: 0 };
    const count: Interceptor = (next) => (req) => {
      if (!req.stream) return next(req);
      const rpc = req.method.name;
      async function* tap<M>(messages: AsyncIterable<M>) {
        for await (const m of messages) {
          const n = (m as { settlements?: unknown[] }).settlements?.length ?? 0;
          if (rpc === "Claim") sent.onPolls += n;
          else if (rpc === "Settle") sent.onSettle += n;
          yield m;
        }
      }
      return next({ ...req, message: tap(req.message) });
    };
    const transport = createGrpcTransport({ baseUrl: gateway.grpcUrl, interceptors: [count] });
    const w = new Worker({
      transport,
      queues: ["carried"],
      concurrency: 10,
      prefetch: 0,
      handler: async () => {},
    });
    try {
      const ids = await client.enqueueBatch(Array.from({ length: 100 }, () => ({ queue: "carried" })));
      await w.start();
      await until(() => w.snapshot().succeeded === 100);
      const jobs = await Promise.all(ids.map((r) => client.getJob(r.jobId)));
      expect(jobs.every((j) => j.state === JobState.SUCCEEDED)).toBe(true);
      expect(sent.onPolls + sent.onSettle).toBe(100);
      expect(sent.onPolls).toBeGreaterThanOrEqual(80);
      expect(w.snapshot()).toMatchObject({ settleRefused: 0, failed: 0 });
    } finally {
      await w.stop({ graceMs: 0 });
      await teardown();
    }
  });

  it("retries a failed handler and records the failure's type and message", async () => {
    const { client, worker, teardown } = setup();
    try {
      const attempts: number[] = [];
      const w = worker({
        queues: ["flaky"],
        handler: async (job) => {
          attempts.push(job.attempt);
          if (job.attempt === 1) throw new TypeError("first try breaks");
          if (job.attempt === 2) throw new NonRetryableError("second try gives up");
        },
      });
      await w.start();
      const { jobId } = await client.enqueue({ queue: "flaky", payload: "x", maxAttempts: 5 });
      await until(async () => (await client.getJob(jobId)).state === 5 /* FAILED */);
      const info = await client.getJob(jobId);
      expect(attempts).toEqual([1, 2]);
      expect(info.lastError).toMatchObject({
        type: "NonRetryableError",
        message: "second try gives up",
        retryable: false,
      });
      expect(w.snapshot().failed).toBe(2);
    } finally {
      await teardown();
    }
  });

  it("aborts the handler's signal when its job is cancelled, and settles it cancelled", async () => {
    const { client, worker, teardown } = setup();
    try {
      let started = false;
      let reason: unknown;
      const w = worker({
        queues: ["long"],
        leaseMs: 1500,
        handler: (job: JobContext) =>
          new Promise((_, reject) => {
            started = true;
            job.signal.addEventListener("abort", () => {
              reason = job.signal.reason;
              reject(job.signal.reason);
            });
          }),
      });
      await w.start();
      const { jobId } = await client.enqueue({ queue: "long", payload: "wait" });
      await until(() => started);
      await client.cancelJob(jobId, "no longer needed");
      await until(() => w.snapshot().cancelled === 1, 10_000);
      expect(reason).toBeInstanceOf(JobAbortError);
      expect((reason as JobAbortError).kind).toBe("cancelled");
      expect((await client.getJob(jobId)).state).toBe(6 /* CANCELLED */);
    } finally {
      await teardown();
    }
  });

  it("stop() lets running handlers finish, then stops promptly", async () => {
    const { client, worker, teardown } = setup();
    try {
      let release: () => void = () => {};
      const gate = new Promise<void>((r) => {
        release = r;
      });
      let started = 0;
      const w = worker({
        queues: ["drain"],
        maxWaitMs: 30_000,
        handler: async () => {
          started++;
          await gate;
          return "done";
        },
      });
      await w.start();
      await client.enqueueBatch([{ queue: "drain" }, { queue: "drain" }]);
      await until(() => started === 2);
      const stopped = w.stop({ graceMs: 10_000 });
      expect(w.state).toBe("DRAINING");
      await new Promise((r) => setTimeout(r, 100));
      expect(w.state).toBe("DRAINING");
      const t0 = Date.now();
      release();
      await stopped;
      expect(Date.now() - t0).toBeLessThan(2000);
      expect(w.snapshot()).toMatchObject({ state: "STOPPED", succeeded: 2, running: 0 });
    } finally {
      await teardown();
    }
  });

  it("stop() when idle returns without sitting out the long poll", async () => {
    const { worker, teardown } = setup();
    try {
      const w = worker({ queues: ["idle"], maxWaitMs: 30_000, handler: async () => {} });
      await w.start();
      await new Promise((r) => setTimeout(r, 200));
      const t0 = Date.now();
      await w.stop();
      expect(Date.now() - t0).toBeLessThan(1000);
      expect(w.state).toBe("STOPPED");
    } finally {
      await teardown();
    }
  });

  it("a stop racing a claim leaves no job leased: each job is untouched or run and settled", async () => {
    const { client, worker, teardown } = setup();
    const outcomes: Record<string, number> = {};
    try {
      // The enqueue wakes the parked long poll while the stop half-closes the stream: the gateway's
      // claim and the drain cross. A claim answered into a cancelled stream would leave its job
      // RUNNING until the lease expires, unseen by the worker.
      for (let round = 0; round < 30; round++) {
        const q = `stop-race-${round}`;
        const w = worker({ queues: [q], maxWaitMs: 30_000, handler: async () => {} });
        await w.start();
        await new Promise((r) => setTimeout(r, 50));
        const enqueued = client.enqueue({ queue: q, payload: {} });
        await new Promise((r) => setTimeout(r, round % 10));
        await w.stop();
        const { jobId } = await enqueued;
        const state = (await client.getJob(jobId)).state;
        outcomes[JobState[state]] = (outcomes[JobState[state]] ?? 0) + 1;
        expect([JobState.QUEUED, JobState.SUCCEEDED], `round ${round}`).toContain(state);
        expect(w.snapshot().claimed).toBe(state === JobState.SUCCEEDED ? 1 : 0);
      }
    } finally {
      console.log("stop racing a claim, job states over 30 rounds", outcomes);
      await teardown();
    }
  });

  it("settles handlers still running at the grace deadline as a retryable WorkerShutdown", async () => {
    const { client, worker, teardown } = setup();
    try {
      let aborted: unknown;
      const w = worker({
        queues: ["stuck"],
        handler: (job) =>
          new Promise(() => {
            job.signal.addEventListener("abort", () => {
              aborted = job.signal.reason;
            });
          }),
      });
      await w.start();
      const { jobId } = await client.enqueue({ queue: "stuck", maxAttempts: 3 });
      await until(() => w.snapshot().running === 1);
      await w.stop({ graceMs: 200 });
      expect((aborted as JobAbortError).kind).toBe("shutdown");
      const info = await client.getJob(jobId);
      expect(info.lastError).toMatchObject({ type: "WorkerShutdown", retryable: true });
      expect(info.state).not.toBe(3 /* RUNNING */);
    } finally {
      await teardown();
    }
  });

  it("keeps a lease alive with heartbeats while a handler outlives it", async () => {
    const { client, worker, teardown } = setup();
    try {
      const deadlines: number[] = [];
      const w = worker({
        queues: ["slow"],
        leaseMs: 1000,
        handler: async (job) => {
          for (let i = 0; i < 6; i++) {
            deadlines.push(job.leaseDeadline.getTime());
            await new Promise((r) => setTimeout(r, 500));
          }
          return String(job.attempt);
        },
      });
      await w.start();
      const { jobId } = await client.enqueue({ queue: "slow" });
      await until(() => w.snapshot().succeeded === 1);
      const info = await client.getJob(jobId);
      expect(info.attempt).toBe(1);
      expect(new TextDecoder().decode(info.result)).toBe("1");
      expect(w.snapshot()).toMatchObject({ leaseLost: 0, settleRefused: 0, claimed: 1 });
      // The deadline the handler sees moved forward as heartbeats extended it.
      expect(deadlines.at(-1)).toBeGreaterThan((deadlines[0] ?? 0) + 2000);
    } finally {
      await teardown();
    }
  });

  it("aborts a handler whose lease was lost and never settles that attempt", async () => {
    const { client, worker, teardown } = setup();
    try {
      let lostReason: unknown;
      const w = worker({
        queues: ["lossy"],
        concurrency: 2,
        // The lease lapses long before the first beat, so the gateway re-queues the job as attempt 2.
        leaseMs: 200,
        heartbeatIntervalMs: 1500,
        handler: async (job) => {
          if (job.attempt > 1) return "second";
          await new Promise<void>((resolve) => job.signal.addEventListener("abort", () => resolve()));
          lostReason = job.signal.reason;
          return "first, too late";
        },
      });
      await w.start();
      const { jobId } = await client.enqueue({ queue: "lossy" });
      await until(() => lostReason !== undefined && w.snapshot().succeeded === 1);
      expect((lostReason as JobAbortError).kind).toBe("lease_lost");
      await new Promise((r) => setTimeout(r, 100));
      expect(w.snapshot()).toMatchObject({ leaseLost: 1, settleRefused: 0, succeeded: 1, claimed: 2 });
      const info = await client.getJob(jobId);
      expect(info.attempt).toBe(2);
      expect(new TextDecoder().decode(info.result)).toBe("second");
    } finally {
      await teardown();
    }
  });
});
