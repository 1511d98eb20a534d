import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, type GrpcStubs, grpcStubs, seconds, unary } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const engines = [
  { engine: "pglite" as const, available: true },
  { engine: "postgres" as const, available: haveService("postgres") && haveService("redis") },
];

/** A Timestamp as proto-loader gives it (longs as strings), in ms. */
const ms = (t: { seconds: string; nanos: number } | null) =>
  t === null ? null : Number(t.seconds) * 1000 + t.nanos / 1e6;

interface AttemptJson {
  attempt: number;
  worker_id: string;
  gateway: string;
  claimed_at: { seconds: string; nanos: number } | null;
  finished_at: { seconds: string; nanos: number } | null;
  outcome: string;
  error: { type: string; message: string; retryable: boolean } | null;
  duration: { seconds: string; nanos: number } | null;
}

// GetJob's attempts over plain grpc-js stubs, as a worker and a producer in another language see them:
// each attempt that did not succeed, in order, then the one running or succeeded, from the job itself.
for (const { engine, available } of engines) {
  describe.skipIf(!available)(`GetJob's attempts over grpc-js stubs (${engine})`, () => {
    let gw: TestGateway;
    let stubs: GrpcStubs;
    beforeAll(async () => {
      gw = await startTestGateway({ engine });
      stubs = grpcStubs(gw.grpcUrl);
    });
    afterAll(async () => {
      stubs.close();
      await gw.stop();
    });

    const claimOne = async (queue: string, workerId: string) => {
      const { jobs } = await unary(stubs.worker, "ClaimOnce", {
        queues: [queue],
        max_jobs: 1,
        worker_id: workerId,
      });
      expect(jobs).toHaveLength(1);
      return jobs[0] as { id: string; attempt: number };
    };
    const settle = async (settlement: object) => {
      const s = duplex(stubs.worker, "Settle");
      const res = await s.send({ settlements: [settlement] });
      s.end();
      expect(res.results[0].status).toBe("SETTLE_STATUS_ACCEPTED");
    };
    const fail = (job: { id: string; attempt: number }, message: string) =>
      settle({
        lease: { job_id: job.id, attempt: job.attempt },
        failure: { type: "Upstream", message, retryable: true, retry_after: seconds(0) },
      });
    const attemptsOf = async (id: string) =>
      (await unary<{ attempts: AttemptJson[] }>(stubs.producer, "GetJob", { job_id: id })).attempts;

    it("shows a job that failed twice then succeeded as three attempts, the two errors in order", async () => {
      const queue = "attempts-three";
      const before = Date.now();
      const { job_id: id } = await unary(stubs.producer, "Enqueue", {
        job: { queue, payload: Buffer.from("{}"), max_attempts: 5 },
      });
      expect(await attemptsOf(id)).toEqual([]);

      await fail(await claimOne(queue, "worker-a"), "connection refused");
      await fail(await claimOne(queue, "worker-b"), "timed out after 30 s");
      const third = await claimOne(queue, "worker-c");
      const running = await attemptsOf(id);
      expect(running.map((a) => [a.attempt, a.outcome, a.finished_at])).toEqual([
        [1, "failed", expect.anything()],
        [2, "failed", expect.anything()],
        [3, "running", null],
      ]);
      await settle({ lease: { job_id: id, attempt: third.attempt }, success: { result: Buffer.from("ok") } });
      const after = Date.now();

      const attempts = await attemptsOf(id);
      expect(
        attempts.map((a) => ({
          attempt: a.attempt,
          worker: a.worker_id,
          outcome: a.outcome,
          error: a.error,
        })),
      ).toEqual([
        {
          attempt: 1,
          worker: "worker-a",
          outcome: "failed",
          error: { type: "Upstream", message: "connection refused", retryable: true, retry_after: null },
        },
        {
          attempt: 2,
          worker: "worker-b",
          outcome: "failed",
          error: { type: "Upstream", message: "timed out after 30 s", retryable: true, retry_after: null },
        },
        { attempt: 3, worker: "worker-c", outcome: "succeeded", error: null },
      ]);
      // Each attempt within the test's time, claimed before it finished, and after the one before it.
      let previous = before - 1000;
      for (const a of attempts) {
        const claimed = ms(a.claimed_at) as number;
        const finished = ms(a.finished_at) as number;
        expect(claimed).toBeGreaterThanOrEqual(previous);
        expect(finished).toBeGreaterThanOrEqual(claimed);
        expect(finished).toBeLessThanOrEqual(after + 1000);
        expect(a.duration).not.toBeNull();
        previous = finished;
      }
    });
  });
}
