import { durationMs } from "@bufbuild/protobuf/wkt";
import { createClient, type Client as RpcClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import {
  AdminService,
  type ClaimResponse,
  ProducerService,
  ThrottleReason,
  WorkerService,
} from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { MemoryLimiter } from "../limiter/memory-limiter.js";
import { silentLogger } from "../log.js";
import { type Gateway, startGateway } from "../server.js";
import { pgliteDb } from "../store/db.js";
import { RecordingLimiter } from "../testing/recording-limiter.js";

// startGateway's seams: the limiter and the clock a test passes are the ones the gates use.
describe("startGateway with a limiter and a clock of the test's", () => {
  let gateway: Gateway;
  let limiter: RecordingLimiter;
  let now = Date.now();
  let admin: RpcClient<typeof AdminService>;
  let producer: RpcClient<typeof ProducerService>;
  let worker: RpcClient<typeof WorkerService>;

  beforeAll(async () => {
    const config = { ...loadConfig("dev", {}), grpcPort: 0, httpPort: 0, host: "127.0.0.1", devPgPort: null };
    limiter = new RecordingLimiter(new MemoryLimiter(() => now));
    gateway = await startGateway(config, silentLogger(), { db: await pgliteDb(), limiter, clock: () => now });
    const transport = createTransport({ baseUrl: gateway.grpcUrl });
    admin = createClient(AdminService, transport);
    producer = createClient(ProducerService, transport);
    worker = createClient(WorkerService, transport);
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  const claim = (queue: string, maxJobs = 1): Promise<ClaimResponse> =>
    worker.claimOnce({
      queues: [queue],
      maxJobs,
      maxWait: { seconds: 0n, nanos: 0 },
      workerId: "seams",
      leaseDuration: { seconds: 60n, nanos: 0 },
    });
  const verdict = (res: ClaimResponse) => ThrottleReason[res.throttled[0]?.reason ?? 0];
  const enqueue = (queue: string, n: number) =>
    producer.enqueueBatch({ jobs: Array.from({ length: n }, () => ({ queue })) });

  it("a throttled queue's claims take the slot from the limiter given", async () => {
    await enqueue("throttled", 2);
    await admin.setQueueThrottle({ queue: "throttled", limit: 1, periodMs: 60_000 });
    expect((await claim("throttled")).jobs).toHaveLength(1);
    const refused = await claim("throttled");
    expect(verdict(refused)).toBe("THROTTLE");
    const takes = limiter.events.filter((e) => e.op === "throttleTake" && e.key === "throttled");
    expect(takes.map((e) => e.n)).toEqual([1, 0]);
    // The worker is told exactly what the limiter said.
    const retryAfter = refused.throttled[0]?.retryAfter;
    expect(retryAfter && durationMs(retryAfter)).toBe(takes[1]?.retryAfterMs);
  });

  it("a flow key out of tokens is skipped until the clock given reaches its next token", async () => {
    await admin.setFlowLimit({ flowKey: "acme", ratePerMinute: 60, burst: 1 });
    await producer.enqueueBatch({
      jobs: Array.from({ length: 3 }, () => ({ queue: "keyed", flowKey: "acme" })),
    });
    expect((await claim("keyed")).jobs).toHaveLength(1);
    const blocked = await claim("keyed");
    expect(verdict(blocked)).toBe("FLOW_KEY");
    // One token a second: a second later by the clock given (no real wait) the key is claimed again.
    now += 1000;
    expect((await claim("keyed")).jobs).toHaveLength(1);
  });
});
