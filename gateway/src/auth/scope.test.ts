import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, JobState, ProducerService, WorkerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { hashToken, newToken } from "./tokens.js";

// Worker and producer tokens limited to the queue "mail": everything on "mail" works, anything that
// touches another queue is refused and changes nothing.
const secret = {
  ops: newToken(),
  mailWorker: newToken(),
  mailProducer: newToken(),
  anyWorker: newToken(),
  mailBoth: newToken(),
};
const tokens = [
  { name: "ops", roles: ["operator" as const], queues: null, sha256: hashToken(secret.ops) },
  { name: "mail-worker", roles: ["worker" as const], queues: ["mail"], sha256: hashToken(secret.mailWorker) },
  {
    name: "mail-producer",
    roles: ["producer" as const],
    queues: ["mail"],
    sha256: hashToken(secret.mailProducer),
  },
  {
    name: "mail-both",
    roles: ["worker" as const, "producer" as const],
    queues: ["mail"],
    sha256: hashToken(secret.mailBoth),
  },
  { name: "any-worker", roles: ["worker" as const], queues: null, sha256: hashToken(secret.anyWorker) },
];

async function codeOf(p: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await p;
    return "ok";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

describe("queue-scoped worker and producer tokens", () => {
  let gw: TestGateway;
  const as = (token: string) => {
    const transport = createTransport({ baseUrl: gw.grpcUrl, token });
    return {
      producer: createClient(ProducerService, transport),
      worker: createClient(WorkerService, transport),
    };
  };
  const jobsIn = async (queue: string) =>
    Number(
      (
        await gw.store.db.query<{ n: string }>(
          { name: "", text: "select count(*)::text as n from taskq.jobs where queue = $1" },
          [queue],
        )
      )[0]?.n,
    );

  beforeAll(async () => {
    gw = await startTestGateway({ config: { tokens } });
  });
  afterAll(() => gw?.stop());

  it("a scoped producer enqueues into its queue only; a refused batch writes none of its jobs", async () => {
    const { producer } = as(secret.mailProducer);
    expect(await codeOf(producer.enqueue({ job: { queue: "mail" } }))).toBe("ok");
    expect(await codeOf(producer.enqueue({ job: { queue: "billing" } }))).toBe(Code.PermissionDenied);
    const batch = producer.enqueueBatch({ jobs: [{ queue: "mail" }, { queue: "billing" }] });
    expect(await codeOf(batch)).toBe(Code.PermissionDenied);
    expect([await jobsIn("mail"), await jobsIn("billing")]).toEqual([1, 0]);
  });

  it("a scoped producer can neither read nor cancel another queue's job", async () => {
    const { jobId } = await as(secret.ops).producer.enqueue({ job: { queue: "billing" } });
    const { producer } = as(secret.mailProducer);
    expect(await codeOf(producer.getJob({ jobId }))).toBe(Code.PermissionDenied);
    expect(await codeOf(producer.cancelJob({ jobId, reason: "no" }))).toBe(Code.PermissionDenied);
    const job = await as(secret.ops).producer.getJob({ jobId });
    expect(job.job?.state).toBe(JobState.QUEUED);
  });

  it("a scoped worker claims from its queue only", async () => {
    const { worker } = as(secret.mailWorker);
    const both = worker.claimOnce({ queues: ["mail", "billing"], maxJobs: 10 });
    expect(await codeOf(both)).toBe(Code.PermissionDenied);
    const res = await worker.claimOnce({ queues: ["mail"], maxJobs: 10 });
    expect(res.jobs.map((j) => j.queue)).toEqual(["mail"]);
  });

  it("one token may hold worker and producer: a worker that enqueues follow-up jobs", async () => {
    const { producer, worker } = as(secret.mailBoth);
    const { jobId } = await producer.enqueue({ job: { queue: "mail" } });
    const res = await worker.claimOnce({ queues: ["mail"], maxJobs: 10 });
    expect(res.jobs.map((j) => j.id)).toContain(jobId);
    expect(await codeOf(producer.enqueue({ job: { queue: "billing" } }))).toBe(Code.PermissionDenied);
    expect(
      await codeOf(
        createClient(
          AdminService,
          createTransport({ baseUrl: gw.grpcUrl, token: secret.mailBoth }),
        ).listQueues({}),
      ),
    ).toBe(Code.PermissionDenied);
  });

  it("a scoped worker cannot heartbeat or settle another queue's lease", async () => {
    const other = await as(secret.anyWorker).worker.claimOnce({ queues: ["billing"], maxJobs: 1 });
    const job = other.jobs[0];
    if (!job) throw new Error("no billing job to claim");
    const lease = { jobId: job.id, attempt: job.attempt };
    const { worker } = as(secret.mailWorker);
    const heartbeat = async () => {
      for await (const _ of worker.heartbeat(
        (async function* () {
          yield { leases: [lease] };
        })(),
      ));
    };
    const settle = async () => {
      for await (const _ of worker.settle(
        (async function* () {
          yield { settlements: [{ lease, outcome: { case: "success" as const, value: {} } }] };
        })(),
      ));
    };
    expect(await codeOf(heartbeat())).toBe(Code.PermissionDenied);
    expect(await codeOf(settle())).toBe(Code.PermissionDenied);
    const after = await as(secret.ops).producer.getJob({ jobId: job.id });
    expect(after.job?.state).toBe(JobState.RUNNING);
  });
});
