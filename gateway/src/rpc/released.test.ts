import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, type GrpcStubs, grpcStubs, unary } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const engines = [
  { engine: "pglite" as const, available: true },
  { engine: "postgres" as const, available: haveService("postgres") && haveService("redis") },
];

// A Released settlement over plain grpc-js stubs (how a worker in another language gives back a job
// it held ahead of a free slot): the job is claimable at once, and the released attempt is fenced.
for (const { engine, available } of engines) {
  describe.skipIf(!available)(`a released job over grpc-js stubs (${engine})`, () => {
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

    const claimOnce = async (queue: string, workerId: string) =>
      (await unary(stubs.worker, "ClaimOnce", { queues: [queue], max_jobs: 1, worker_id: workerId })).jobs;
    const settle = async (settlement: object) => {
      const s = duplex(stubs.worker, "Settle");
      const res = await s.send({ settlements: [settlement] });
      s.end();
      return res.results[0];
    };

    it("is claimed at once by a second worker; the first worker's settle and heartbeat of it find the lease lost", async () => {
      const queue = "released-stubs";
      const { job_id: id } = await unary(stubs.producer, "Enqueue", {
        job: { queue, payload: Buffer.from("{}"), max_attempts: 2 },
      });
      const [held] = await claimOnce(queue, "first");
      expect(held).toMatchObject({ id, attempt: 1 });
      expect(
        await settle({ lease: { job_id: id, attempt: 1 }, released: { reason: "queue paused" } }),
      ).toMatchObject({
        status: "SETTLE_STATUS_ACCEPTED",
        state: "JOB_STATE_QUEUED",
      });
      const [again] = await claimOnce(queue, "second");
      expect(again).toMatchObject({ id, attempt: 2 });
      expect(
        await settle({ lease: { job_id: id, attempt: 1 }, success: { result: Buffer.from("late") } }),
      ).toMatchObject({
        status: "SETTLE_STATUS_LEASE_LOST",
      });
      const beat = duplex(stubs.worker, "Heartbeat");
      const hb = await beat.send({ leases: [{ job_id: id, attempt: 1 }] });
      beat.end();
      expect(hb.leases[0].state).toBe("LEASE_STATE_LEASE_LOST");
      // The second worker's attempt is the one that counts: two real attempts for max_attempts 2.
      const { job } = await unary(stubs.producer, "GetJob", { job_id: id });
      expect(job).toMatchObject({
        state: "JOB_STATE_RUNNING",
        attempt: 2,
        max_attempts: 3,
        worker_id: "second",
      });
    });

    it("refuses a released settlement whose reason is too long, naming the field, and changes nothing", async () => {
      const queue = "released-bad";
      const { job_id: id } = await unary(stubs.producer, "Enqueue", {
        job: { queue, payload: Buffer.from("{}") },
      });
      await claimOnce(queue, "w");
      const s = duplex(stubs.worker, "Settle");
      const err = await s
        .send({
          settlements: [{ lease: { job_id: id, attempt: 1 }, released: { reason: "x".repeat(5000) } }],
        })
        .then(
          () => null,
          (e: { details?: string }) => e,
        );
      s.end();
      expect(err?.details).toMatch(/settlements\[0\]\.released\.reason/);
      const { job } = await unary(stubs.producer, "GetJob", { job_id: id });
      expect(job).toMatchObject({ state: "JOB_STATE_RUNNING", attempt: 1 });
    });
  });
}
