import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GrpcStubs, grpcStubs, unary } from "../testing/grpc-stubs.js";
import { newJob } from "../testing/new-job.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// Each attempt that did not succeed names the gateway that ended it (taskq.job_attempts.gateway): the
// settling gateway for a failure (settle, or settle with a claim), the releasing one for a claim given
// back, and the maintenance leader for a lease that expired. GetJob's attempts carry it.

const engines = [
  { engine: "pglite" as const, available: true },
  { engine: "postgres" as const, available: haveService("postgres") && haveService("redis") },
];

for (const { engine, available } of engines) {
  describe.skipIf(!available)(`the gateway of an attempt, on ${engine}`, () => {
    let gw: TestGateway;
    let stubs: GrpcStubs;
    const queue = "attempt-gateway";
    const fail = (c: { id: string; attempt: number }) => ({
      jobId: c.id,
      attempt: c.attempt,
      kind: "failure" as const,
      error: { type: "Boom", message: `attempt ${c.attempt}`, retryable: true },
      delayMs: 0,
    });
    const claim = async () => {
      const [c] = await gw.store.jobsClaim({ queues: [queue], limit: 1, leaseMs: 60_000, workerId: "w1" });
      if (!c) throw new Error("nothing claimed");
      return c;
    };

    beforeAll(async () => {
      gw = await startTestGateway({ engine });
      stubs = grpcStubs(gw.grpcUrl);
    });
    afterAll(async () => {
      stubs?.close();
      await gw?.stop();
    });

    it("a settle, a release and a lease rescue each record this gateway's instance id", async () => {
      const [job] = await gw.store.jobsEnqueue([newJob(queue, { maxAttempts: 10 })]);
      if (!job) throw new Error("setup");
      await gw.store.jobsSettle([fail(await claim())]); // attempt 1: failed, by settle
      await gw.store.jobsSettle([fail(await claim())]); // attempt 2: the same
      const third = await claim();
      await gw.store.jobsRelease([{ jobId: third.id, attempt: third.attempt }]); // attempt 3: released
      await claim(); // attempt 4: its lease expires, rescued by the leader
      expect((await gw.store.leasesRescue(100, new Date(Date.now() + 120_000))).count).toBe(1);

      const got = await unary(stubs.producer, "GetJob", { job_id: job.id });
      expect(
        got.attempts.map((a: { attempt: number; outcome: string; gateway: string }) => [
          a.attempt,
          a.outcome,
          a.gateway,
        ]),
      ).toEqual([
        [1, "failed", gw.instanceId],
        [2, "failed", gw.instanceId],
        [3, "released", gw.instanceId],
        [4, "lease_expired", gw.instanceId],
      ]);
    });
  });
}
