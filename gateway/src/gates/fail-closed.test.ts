import { createClient } from "@connectrpc/connect";
import { Client, createTransport } from "@taskq/sdk";
import { AdminService, ThrottleReason, WorkerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

describe("with its limiter (Redis) unreachable", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // Nothing listens on port 1: every limiter call fails.
    gw = await startTestGateway({ config: { redisUrl: "redis://127.0.0.1:1" } });
  });
  afterAll(() => gw.stop());

  it("declines gated queues with their own reason (fail closed), serves the others, and counts it", async () => {
    const transport = createTransport({ baseUrl: gw.grpcUrl });
    const admin = createClient(AdminService, transport);
    const worker = createClient(WorkerService, transport);
    const client = new Client({ transport });
    await admin.ensureQueue({ queue: "limited" }); // a verb refuses a queue never seen
    await admin.setQueueThrottle({ queue: "limited", limit: 10, periodMs: 1000 });
    await client.enqueue({ queue: "limited" });
    await client.enqueue({ queue: "free" });

    const limited = await worker.claimOnce({ queues: ["limited"], maxJobs: 1 });
    expect(limited.jobs).toEqual([]);
    expect(limited.throttled).toMatchObject([{ queue: "limited", reason: ThrottleReason.THROTTLE }]);
    expect(Number(limited.throttled[0]?.retryAfter?.seconds)).toBe(1);

    const free = await worker.claimOnce({ queues: ["free"], maxJobs: 1 });
    expect(free.jobs).toHaveLength(1);

    const metrics = await (await fetch(`${gw.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/taskq_limiter_errors_total [1-9]/);
    expect(metrics).toContain('taskq_throttled_verdicts_total{queue="limited",reason="THROTTLE"} 1');
    expect(metrics).toContain('taskq_jobs_claimed_total{queue="free"} 1');
    expect(metrics).toContain('taskq_jobs{queue="limited",state="queued"} 1');

    const ready = await fetch(`${gw.httpUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toContain("redis");
  });
});
