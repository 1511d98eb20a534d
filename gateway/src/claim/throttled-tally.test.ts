import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, WorkerService } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const clients = (gw: TestGateway) => {
  const transport = createTransport({ baseUrl: gw.grpcUrl });
  return { admin: createClient(AdminService, transport), worker: createClient(WorkerService, transport) };
};

// Gateways on Postgres share the test Redis for their limiters.
const services = haveService("postgres") && haveService("redis");

describe("throttled verdicts in queue_counters", () => {
  it.skipIf(!services)("counts every verdict each gateway answered, by reason, fleet-wide", async () => {
    // "a" flushes on its timer; "b" only when it stops.
    const a = await startTestGateway({ engine: "postgres", config: { throttledFlushMs: 200 } });
    const b = await startTestGateway({
      databaseUrl: a.databaseUrl ?? "",
      config: { throttledFlushMs: 60_000 },
    });
    try {
      const [ca, cb] = [clients(a), clients(b)];
      await ca.admin.ensureQueue({ queue: "held" }); // a verb refuses a queue never seen
      await ca.admin.pauseQueue({ queue: "held" });
      await ca.admin.ensureQueue({ queue: "metered", profile: {} });
      await ca.admin.setQueueThrottle({ queue: "metered", limit: 1, periodMs: 60_000 });
      const poll = (c: typeof ca, queue: string) => c.worker.claimOnce({ queues: [queue], maxJobs: 1 });
      for (let i = 0; i < 3; i++) await poll(ca, "held");
      for (let i = 0; i < 4; i++) await poll(cb, "held");
      // Nothing is ready on "metered", so its throttle spends nothing and declines nothing.
      await poll(cb, "metered");
      await b.stop();
      const counted = async (queue: string) =>
        (await ca.admin.queueCounters({ queue })).rows[0]?.throttledLastHour;
      await expect.poll(() => counted("held"), { timeout: 5000 }).toEqual({ PAUSED: 7n });
      expect(await counted("metered")).toEqual({});
    } finally {
      await b.stop();
      await a.stop();
    }
  });
});
