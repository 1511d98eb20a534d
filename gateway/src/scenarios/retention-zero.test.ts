import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, type GrpcStubs, grpcStubs, seconds, unary } from "../testing/grpc-stubs.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// A gateway configured with retentionSeconds 0 deletes each job in the settle that finishes it, on the
// poll that carries the settle and on the Settle stream alike; one that keeps finished jobs answers
// GetJob with the finished job.
describe("retentionSeconds 0, through the gateway", () => {
  let deleting: TestGateway;
  let keeping: TestGateway;
  let stubs: { deleting: GrpcStubs; keeping: GrpcStubs };
  let n = 0;

  beforeAll(async () => {
    deleting = await startTestGateway({ config: { retentionSeconds: 0 } });
    keeping = await startTestGateway();
    stubs = { deleting: grpcStubs(deleting.grpcUrl), keeping: grpcStubs(keeping.grpcUrl) };
  });
  afterAll(async () => {
    stubs?.deleting.close();
    stubs?.keeping.close();
    await deleting?.stop();
    await keeping?.stop();
  });

  /** Enqueues two jobs, claims them, settles one on the next poll and one on the Settle stream. */
  async function runTwo(s: GrpcStubs): Promise<{ ids: string[]; states: string[] }> {
    const q = `retention-${++n}`;
    for (let i = 0; i < 2; i++)
      await unary(s.producer, "Enqueue", { job: { queue: q, payload: Buffer.from("{}") } });
    const claim = duplex(s.worker, "Claim");
    const poll = { queues: [q], max_jobs: 1, worker_id: "w", lease_duration: seconds(30) };
    const [a] = (await claim.send(poll)).jobs;
    const [b] = (await claim.send(poll)).jobs;
    const settled = await claim.send({
      ...poll,
      settlements: [{ lease: { job_id: a.id, attempt: a.attempt }, success: { result: Buffer.from("ok") } }],
    });
    claim.end();
    const settle = duplex(s.worker, "Settle");
    const other = await settle.send({
      settlements: [{ lease: { job_id: b.id, attempt: b.attempt }, success: {} }],
    });
    settle.end();
    return {
      ids: [a.id, b.id],
      states: [settled.settle_results[0].state, other.results[0].state],
    };
  }

  const getJob = (s: GrpcStubs, id: string) =>
    unary<{ job: { state: string } }>(s.producer, "GetJob", { job_id: id }).then(
      (r) => r.job.state,
      (err: { code: number }) => `error ${err.code}`,
    );

  it("answers each settle as succeeded, and the jobs are gone", async () => {
    const { ids, states } = await runTwo(stubs.deleting);
    expect(states).toEqual(["JOB_STATE_SUCCEEDED", "JOB_STATE_SUCCEEDED"]);
    // gRPC status 5: NOT_FOUND.
    expect(await Promise.all(ids.map((id) => getJob(stubs.deleting, id)))).toEqual(["error 5", "error 5"]);
  });

  it("keeps the finished jobs with the default retention", async () => {
    const { ids } = await runTwo(stubs.keeping);
    expect(await Promise.all(ids.map((id) => getJob(stubs.keeping, id)))).toEqual([
      "JOB_STATE_SUCCEEDED",
      "JOB_STATE_SUCCEEDED",
    ]);
  });
});
