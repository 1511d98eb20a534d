import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { Worker } from "./worker.js";

/** A local port nothing listens on. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

describe("Worker without a gateway", () => {
  it("validates its options", () => {
    const handler = async () => {};
    expect(() => new Worker({ baseUrl: "http://x", queues: [], handler })).toThrow(/queues/);
    expect(() => new Worker({ baseUrl: "http://x", queues: ["q"], concurrency: 0, handler })).toThrow(
      /concurrency/,
    );
  });

  it("moves through its states; stop() before start() stops at once and is idempotent", async () => {
    const w = new Worker({ baseUrl: "http://127.0.0.1:1", queues: ["q"], handler: async () => {} });
    expect(w.state).toBe("INITIALIZED");
    const a = w.stop();
    expect(w.stop()).toBe(a);
    await a;
    expect(w.state).toBe("STOPPED");
    await expect(w.start()).rejects.toThrow(/STOPPED/);
  });

  it("counts claim errors and reconnects with growing backoff while the gateway is unreachable", async () => {
    const port = await deadPort();
    const w = new Worker({
      baseUrl: `http://127.0.0.1:${port}`,
      queues: ["q"],
      handler: async () => {},
      reconnect: { initialMs: 20, maxMs: 200, multiplier: 2, jitter: 0 },
    });
    const running = w.run();
    expect(w.state).toBe("RUNNING");
    await new Promise((r) => setTimeout(r, 700));
    const s = w.snapshot();
    // Delays 20, 40, 80, 160, 200…: within 700 ms that is 4 to 6 failures, not hundreds (no hot loop).
    expect(s.claimErrors).toBeGreaterThanOrEqual(3);
    expect(s.claimErrors).toBeLessThanOrEqual(7);
    expect(s.reconnects).toBeGreaterThanOrEqual(s.claimErrors - 1);
    expect(s.throttled).toEqual({});
    const t0 = Date.now();
    await w.stop();
    await running;
    expect(Date.now() - t0).toBeLessThan(500);
    expect(w.snapshot().state).toBe("STOPPED");
  });
});
