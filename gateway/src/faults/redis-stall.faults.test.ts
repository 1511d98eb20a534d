// Redis stalled (a black hole: connections stay open, nothing answers) rather than refused. A limiter
// call that never returns must not hang the poll: gated queues are declined (fail closed) within a
// bound, readyz reports Redis, and once Redis answers again the limits admit.
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, ThrottleReason, WorkerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { enqueueJobs, scenarioQueue } from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import { FAULT_TOKEN } from "./token.js";

const STALL_MS = 8000;
/** A poll on a gated queue is answered within this while Redis is silent. */
const ANSWER_BOUND_MS = 2500;

describe.skipIf(!haveService("postgres") || !haveService("redis"))("Redis stalled", () => {
  let env: FaultEnv;
  let gateway: GatewayChild;
  beforeAll(async () => {
    env = await startFaultEnv();
    gateway = await startGatewayChild({ ...env.gateway });
  });
  afterAll(async () => {
    await gateway?.child.stop();
    await env?.close();
  });

  it("declines gated polls within a bound instead of hanging them, and says so in readyz", {
    timeout: 60_000,
  }, async () => {
    const transport = createTransport({ baseUrl: gateway.grpcUrl, token: FAULT_TOKEN });
    const admin = createClient(AdminService, transport);
    const worker = createClient(WorkerService, transport);
    const throttled = scenarioQueue("stall-throttle");
    const free = scenarioQueue("stall-free");
    await admin.ensureQueue({ queue: throttled });
    await admin.setQueueThrottle({ queue: throttled, limit: 100, periodMs: 1000 });
    await enqueueJobs(gateway.grpcUrl, throttled, 50);
    await enqueueJobs(gateway.grpcUrl, free, 50);
    const poll = async (queue: string) => {
      const started = Date.now();
      try {
        const res = await worker.claimOnce(
          { queues: [queue], maxJobs: 1 },
          { signal: AbortSignal.timeout(10_000) },
        );
        return { ms: Date.now() - started, jobs: res.jobs.length, reason: res.throttled[0]?.reason };
      } catch (err) {
        return { ms: Date.now() - started, jobs: 0, reason: undefined, error: (err as Error).message };
      }
    };
    expect(await poll(throttled)).toMatchObject({ jobs: 1 });

    env.redisProxy.stall();
    const stalledAt = Date.now();
    const gatedPolls = [];
    const freePolls = [];
    let readyDuringStall = 0;
    while (Date.now() - stalledAt < STALL_MS) {
      const [g, f] = await Promise.all([poll(throttled), poll(free)]);
      gatedPolls.push(g);
      freePolls.push(f);
      const readyz = await fetch(`${gateway.httpUrl}/readyz`, { signal: AbortSignal.timeout(5000) });
      if (readyz.status !== 503) readyDuringStall++;
    }
    env.redisProxy.pass();
    const passedAt = Date.now();
    let admittedAfterMs = Number.POSITIVE_INFINITY;
    while (Date.now() - passedAt < 10_000) {
      if ((await poll(throttled)).jobs === 1) {
        admittedAfterMs = Date.now() - passedAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const slowest = Math.max(...gatedPolls.map((p) => p.ms));
    console.log(
      `[faults] Redis stalled ${STALL_MS} ms: ${gatedPolls.length} gated polls, slowest answered in ${slowest} ms (${JSON.stringify(gatedPolls.slice(0, 3))}); free polls ${freePolls.filter((p) => p.jobs === 1).length}/${freePolls.length} served; readyz not 503 ${readyDuringStall}x during the stall; throttle admits again ${admittedAfterMs} ms after`,
    );
    expect(slowest).toBeLessThanOrEqual(ANSWER_BOUND_MS);
    expect(gatedPolls.every((p) => p.jobs === 0 && p.reason === ThrottleReason.THROTTLE)).toBe(true);
    expect(freePolls.every((p) => p.jobs === 1)).toBe(true);
    expect(readyDuringStall).toBe(0);
    expect(admittedAfterMs).toBeLessThanOrEqual(5000);
  });
});
