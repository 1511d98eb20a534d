import { Code, ConnectError } from "@connectrpc/connect";
import { hashToken } from "@taskq/gateway";
import { startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "./logger.js";
import { Worker } from "./worker.js";

// A gateway with tokens: a worker whose credentials it refuses must stop with that error, not retry
// forever (each retry is refused the same way).
const WORKER = "worker-token-failed-test";
const PRODUCER = "producer-token-failed-test";
let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway({
    config: {
      tokens: [
        { name: "w", roles: ["worker"], queues: null, sha256: hashToken(WORKER) },
        { name: "p", roles: ["producer"], queues: null, sha256: hashToken(PRODUCER) },
      ],
    },
  });
});
afterAll(() => gateway.stop());

async function runWith(token: string): Promise<{ worker: Worker; error: unknown; ms: number }> {
  const worker = new Worker({
    baseUrl: gateway.grpcUrl,
    token,
    queues: ["failed-state"],
    handler: async () => {},
    logger: silentLogger,
  });
  const started = Date.now();
  const error = await worker.run().then(
    () => undefined,
    (err: unknown) => err,
  );
  return { worker, error, ms: Date.now() - started };
}

describe("Worker FAILED state", () => {
  it("fails with UNAUTHENTICATED when the gateway does not know its token", async () => {
    const { worker, error, ms } = await runWith("not-a-token");
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unauthenticated);
    expect(worker.state).toBe("FAILED");
    expect(worker.snapshot().failure).toMatch(/unauthenticated/);
    expect(ms).toBeLessThan(10_000);
    // Over for good: it cannot be started again, and stop() returns at once.
    await expect(worker.start()).rejects.toThrow(/FAILED/);
    await worker.stop();
  });

  it("fails with PERMISSION_DENIED when its token lacks the worker role", async () => {
    const { worker, error } = await runWith(PRODUCER);
    expect((error as ConnectError).code).toBe(Code.PermissionDenied);
    expect(worker.snapshot()).toMatchObject({
      state: "FAILED",
      failure: expect.stringMatching(/permission/),
    });
  });

  it("runs as usual with a token the gateway accepts", async () => {
    const worker = new Worker({
      baseUrl: gateway.grpcUrl,
      token: WORKER,
      queues: ["failed-state"],
      handler: async () => {},
      logger: silentLogger,
    });
    const run = worker.run();
    await new Promise((r) => setTimeout(r, 300));
    expect(worker.state).toBe("RUNNING");
    await worker.stop({ graceMs: 0 });
    await run;
    expect(worker.snapshot()).toMatchObject({ state: "STOPPED", failure: undefined });
  });
});
