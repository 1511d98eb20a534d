import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, JobState, ProducerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

/** The console's reads over gRPC: the wire mapping, and every field's INVALID_ARGUMENT by name. */
describe("AdminService console reads", () => {
  let gateway: TestGateway;
  const clients = () => {
    const transport = createTransport({ baseUrl: gateway.grpcUrl });
    return {
      admin: createClient(AdminService, transport),
      producer: createClient(ProducerService, transport),
    };
  };
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => null,
      (e: unknown) => [ConnectError.from(e).code, ConnectError.from(e).rawMessage],
    );

  beforeAll(async () => {
    gateway = await startTestGateway();
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  it("ListJobs pages a state newest first with its total; GetJob and ListJobEvents detail one", async () => {
    const { admin, producer } = clients();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await producer.enqueue({ job: { queue: "paged", payload: new Uint8Array([i]) } })).jobId);
    const first = await admin.listJobs({ queue: "paged", state: JobState.QUEUED, limit: 2 });
    expect(first.total).toBe(3n);
    expect(first.jobs.map((j) => j.id)).toEqual([ids[2], ids[1]]);
    expect(first.jobs[0]).toMatchObject({ state: JobState.QUEUED, payloadBytes: 1, attempt: 0 });
    expect(first.jobs[0]?.enqueuedAt?.seconds).toBeGreaterThan(0n);
    const next = await admin.listJobs({
      queue: "paged",
      state: JobState.QUEUED,
      beforeId: BigInt(ids[1] ?? 0),
    });
    expect(next.jobs.map((j) => j.id)).toEqual([ids[0]]);
    expect((await admin.listJobs({ queue: "paged", state: JobState.FAILED })).jobs).toEqual([]);
    // Database times can carry microseconds: the wire's Timestamp must still encode (whole ms).
    const [claimed] = await gateway.store.jobsClaim({
      queues: ["paged"],
      limit: 1,
      leaseMs: 60_000,
      workerId: "w",
    });
    await gateway.store.jobsSettle([
      {
        jobId: claimed?.id ?? "",
        attempt: 1,
        kind: "failure",
        error: { type: "E", message: "m", retryable: false },
        delayMs: null,
      },
    ]);
    expect((await admin.listJobs({ queue: "paged", state: JobState.FAILED })).total).toBe(1n);
    // UNSPECIFIED: every state, newest first.
    const all = await admin.listJobs({ queue: "paged" });
    expect(all.total).toBe(3n);
    expect(new Set(all.jobs.map((j) => j.state)).size).toBeGreaterThan(1);
    expect(all.jobs.map((j) => BigInt(j.id))).toEqual(
      all.jobs.map((j) => BigInt(j.id)).sort((a, b) => (b > a ? 1 : -1)),
    );
    await admin.redriveFailed({ queue: "paged", limit: 1, smearSeconds: 60 }); // run_at: now + random()
    const [redriven] = (await admin.listJobs({ queue: "paged", state: JobState.SCHEDULED })).jobs;
    expect((redriven?.runAt?.nanos ?? 1) % 1_000_000).toBe(0);
    expect((await admin.listJobEvents({ jobId: ids[0] ?? "" })).events).toEqual([]);
    expect((await admin.queueActivity({ queue: "paged", minutes: 3 })).minutes).toHaveLength(3);
    expect((await admin.listBreakerEvents({ queue: "paged" })).events).toEqual([]);
  });

  it("refuses each bad field with INVALID_ARGUMENT naming it", async () => {
    const { admin } = clients();
    const bad = Code.InvalidArgument;
    expect(await refusal(admin.listJobs({ queue: "q", state: 99 as JobState }))).toEqual([
      bad,
      "state must be a job state, or UNSPECIFIED for all",
    ]);
    expect(await refusal(admin.listJobs({ queue: "bad name", state: JobState.QUEUED }))).toEqual([
      bad,
      expect.stringMatching(/^queue must be 1 to 128/),
    ]);
    expect(await refusal(admin.listJobs({ queue: "q", state: JobState.QUEUED, limit: 0 }))).toEqual([
      bad,
      "limit must be from 1 to 1000 (got 0)",
    ]);
    expect(await refusal(admin.listJobs({ queue: "q", state: JobState.QUEUED, beforeId: 0n }))).toEqual([
      bad,
      expect.stringMatching(/^before_id must be from 1 to/),
    ]);
    expect(await refusal(admin.listJobEvents({ jobId: "x" }))).toEqual([
      bad,
      expect.stringMatching(/^job_id must be a job id/),
    ]);
    expect(await refusal(admin.listBreakerEvents({ queue: "q", limit: 500 }))).toEqual([
      bad,
      "limit must be from 1 to 200 (got 500)",
    ]);
    expect(await refusal(admin.queueActivity({ queue: "q", minutes: 0 }))).toEqual([
      bad,
      "minutes must be from 1 to 60 (got 0)",
    ]);
  });
});
