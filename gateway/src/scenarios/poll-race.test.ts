import { describe, expect, it } from "vitest";
import { gatewayWithStubs } from "../testing/gateway-with-stubs.js";
import { duplex, seconds, unary } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";

// A worker with several Claim streams has several polls out at once. Polls that race for the last
// room under a queue's max_running must split it: one gets the job, the others a MAX_RUNNING verdict.
// Gateways on Postgres share the test Redis for their limiters.
const services = haveService("postgres") && haveService("redis");

describe.skipIf(!services)("polls of one worker racing under max_running", () => {
  const setup = gatewayWithStubs({ engine: "postgres" });

  it("hands the last room to exactly one poll, every time", async () => {
    const { stubs } = setup;
    for (let round = 0; round < 10; round++) {
      const q = `race-${round}`;
      await unary(stubs.admin, "EnsureQueue", { queue: q }); // a verb refuses a queue never seen
      await unary(stubs.admin, "SetQueueConcurrency", { queue: q, max_running: 1 });
      for (let i = 0; i < 3; i++)
        await unary(stubs.producer, "Enqueue", { job: { queue: q, payload: Buffer.from("{}") } });
      const streams = [0, 1, 2].map(() => duplex(stubs.worker, "Claim"));
      const answers = await Promise.all(
        streams.map((s) => s.send({ queues: [q], max_jobs: 5, worker_id: "w", lease_duration: seconds(30) })),
      );
      for (const s of streams) s.end();
      const jobs = answers.flatMap((a) => a.jobs);
      expect(jobs).toHaveLength(1);
      const verdicts = answers.flatMap((a) => a.throttled);
      expect(verdicts).toHaveLength(2);
      for (const v of verdicts) expect(v.reason).toBe("THROTTLE_REASON_MAX_RUNNING");
    }
  });
});
