import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, type GrpcStubs, grpcStubs, seconds, unary } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// A failure retried with retry_after 0 is ready at once, so it must wake polls parked on its queue, on
// the gateway that took the settle and on every other one.
describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "a retry without delay wakes parked polls",
  () => {
    let gws: TestGateway[];
    let stubs: GrpcStubs[];
    let n = 0;

    beforeAll(async () => {
      const first = await startTestGateway({ engine: "postgres" });
      gws = [first, await startTestGateway({ databaseUrl: first.databaseUrl ?? "" })];
      stubs = gws.map((g) => grpcStubs(g.grpcUrl));
    });
    afterAll(async () => {
      for (const s of stubs ?? []) s.close();
      for (const g of [...(gws ?? [])].reverse()) await g.stop();
    });

    for (const where of ["the same gateway", "another gateway"]) {
      it(`within 100 ms on ${where}`, async () => {
        const q = `retry-wakes-${++n}`;
        const [own, other] = stubs as [GrpcStubs, GrpcStubs];
        await unary(own.producer, "Enqueue", { job: { queue: q, payload: Buffer.from("{}") } });
        const first = duplex(own.worker, "Claim");
        const got = await first.send({
          queues: [q],
          max_jobs: 1,
          worker_id: "a",
          lease_duration: seconds(30),
        });
        first.end();
        const job = got.jobs[0];
        expect(job).toBeDefined();

        // The queue is empty now: this poll parks for up to 10 s.
        const parked = duplex((where === "the same gateway" ? own : other).worker, "Claim");
        const waiting = parked.send({ queues: [q], max_jobs: 1, worker_id: "b", max_wait: seconds(10) });
        await new Promise((r) => setTimeout(r, 200));

        const settle = duplex(own.worker, "Settle");
        const out = await settle.send({
          settlements: [
            {
              lease: { job_id: job.id, attempt: job.attempt },
              failure: { type: "Stop", message: "shutting down", retryable: true, retry_after: seconds(0) },
            },
          ],
        });
        const settledAt = performance.now();
        settle.end();
        expect(out.results[0].state).toBe("JOB_STATE_QUEUED");
        const res = await waiting;
        const tookMs = performance.now() - settledAt;
        parked.end();
        expect(res.jobs.map((j: { id: string }) => j.id)).toEqual([job.id]);
        expect(res.jobs[0].attempt).toBe(2);
        // Before the fix the parked poll slept out its whole max_wait (10 s here).
        expect(tookMs).toBeLessThan(100);
      });
    }
  },
);
