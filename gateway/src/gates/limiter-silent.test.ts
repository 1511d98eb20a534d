import { once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { createClient } from "@connectrpc/connect";
import { Client, createTransport } from "@taskq/sdk";
import { AdminService, ThrottleReason, WorkerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDIS_COMMAND_TIMEOUT_MS } from "../limiter/fail-closed.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// Regression: a Redis that accepts connections but never answers (a stall, not a refusal) hung every
// gated poll until the client gave up, and readiness stayed green.
describe("with its limiter (Redis) silent", () => {
  let silent: Server;
  const sockets: Socket[] = [];
  let gw: TestGateway;
  beforeAll(async () => {
    silent = createServer((s) => sockets.push(s.on("error", () => {})));
    silent.listen(0, "127.0.0.1");
    await once(silent, "listening");
    const { port } = silent.address() as { port: number };
    gw = await startTestGateway({ config: { redisUrl: `redis://127.0.0.1:${port}` } });
  });
  afterAll(async () => {
    await gw.stop();
    for (const s of sockets) s.destroy();
    silent.close();
  });

  it("declines gated polls within the command timeout, and readyz reports Redis", async () => {
    const transport = createTransport({ baseUrl: gw.grpcUrl });
    const admin = createClient(AdminService, transport);
    const worker = createClient(WorkerService, transport);
    await admin.ensureQueue({ queue: "limited" }); // a verb refuses a queue never seen
    await admin.setQueueThrottle({ queue: "limited", limit: 10, periodMs: 1000 });
    await new Client({ transport }).enqueue({ queue: "limited" });

    const started = Date.now();
    const res = await worker.claimOnce(
      { queues: ["limited"], maxJobs: 1 },
      { signal: AbortSignal.timeout(10_000) },
    );
    const took = Date.now() - started;
    expect(res.jobs).toEqual([]);
    expect(res.throttled).toMatchObject([{ queue: "limited", reason: ThrottleReason.THROTTLE }]);
    expect(took).toBeGreaterThanOrEqual(REDIS_COMMAND_TIMEOUT_MS - 50);
    expect(took).toBeLessThan(REDIS_COMMAND_TIMEOUT_MS + 3000);

    const ready = await fetch(`${gw.httpUrl}/readyz`, { signal: AbortSignal.timeout(10_000) });
    expect(ready.status).toBe(503);
    expect(await ready.text()).toContain("redis");
  });
});
