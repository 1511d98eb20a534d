import { createClient } from "@connectrpc/connect";
import { Client, createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { describe, expect, it, onTestFinished } from "vitest";
import { hashToken, newToken } from "./auth/tokens.js";
import { until } from "./testing/explain-harness.js";
import { idleWorker } from "./testing/idle-worker.js";
import { startTestGateway } from "./testing/test-gateway.js";

/**
 * The REST reads on the embedded gateway (`taskq dev`: PGlite and the in-process limiter): the
 * workers list and explain as JSON, each field's error named, and the role matrix of their procedures.
 */
describe("REST: GET /api/v1/workers, /api/v1/jobs/:id/explain, /api/v1/queues/:name/explain", () => {
  async function setup(tokens?: { observer: string; worker: string }) {
    const gw = await startTestGateway({
      config: {
        workerRecordsFlushMs: 100,
        ...(tokens
          ? {
              tokens: [
                {
                  name: "watch",
                  roles: ["observer" as const],
                  queues: null,
                  sha256: hashToken(tokens.observer),
                },
                { name: "w", roles: ["worker" as const], queues: null, sha256: hashToken(tokens.worker) },
              ],
            }
          : {}),
      },
    });
    onTestFinished(() => gw.stop());
    const get = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${gw.httpUrl}/api/v1/${path}`, init);
      return {
        status: res.status, // biome-ignore lint/suspicious/noExplicitAny: a JSON body, read field by field
        body: (await res.json()) as Record<string, any>,
      };
    };
    return { gw, get };
  }

  it("answers the workers list and explanations as their AdminService JSON", async () => {
    const { gw, get } = await setup();
    const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl }));
    await admin.ensureQueue({ queue: "rest-mail" });
    await admin.setQueueThrottle({ queue: "rest-mail", limit: 1, periodMs: 60_000 });
    await idleWorker({ baseUrl: gw.grpcUrl, workerId: "rest-worker", queues: ["rest-mail"], concurrency: 3 });
    const client = new Client({ baseUrl: gw.grpcUrl });
    const first = (await client.enqueue({ queue: "rest-mail" })).jobId;
    await until(
      async () => (await get(`jobs/${first}/explain`)).body.explanation?.state === "JOB_STATE_SUCCEEDED",
      5000,
    );
    const id = (await client.enqueue({ queue: "rest-mail" })).jobId;

    await until(async () => (await get("workers?queue=rest-mail")).body.workers?.length === 1, 15_000);
    const workers = await get("workers?queue=rest-mail");
    expect(workers.status).toBe(200);
    expect(workers.body.workers).toEqual([
      expect.objectContaining({ workerId: "rest-worker", queues: ["rest-mail"], concurrency: 3 }),
    ]);
    expect((await get("workers?queue=other")).body).toEqual({});

    const job = await get(`jobs/${id}/explain`);
    expect(job.status).toBe(200);
    expect(job.body.explanation).toMatchObject({
      queue: "rest-mail",
      jobId: id,
      state: "JOB_STATE_QUEUED",
      firstBlocking: "throttle",
    });
    const throttle = job.body.explanation.reasons.find((r: { gate: string }) => r.gate === "throttle");
    expect(throttle).toMatchObject({ verdict: "THROTTLE_REASON_THROTTLE", blocking: true });
    expect(throttle.figures).toMatchObject({ limit: 1, period_ms: 60000, interval_ms: 60000 });
    const queue = await get("queues/rest-mail/explain");
    expect(queue.body.explanation).toMatchObject({ jobId: id, firstBlocking: "throttle" });
  });

  it("names the field of bad input, says 404 for what does not exist, 405 for other methods", async () => {
    const { get } = await setup();
    const bad = await get("jobs/abc/explain");
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^job_id /);
    expect((await get("jobs/987654/explain")).status).toBe(404);
    expect((await get("queues/never-seen/explain")).status).toBe(404);
    const badQueue = await get("queues/a%20b/explain");
    expect(badQueue.status).toBe(400);
    expect(badQueue.body.error.message).toMatch(/^queue /);
    const badFilter = await get("workers?queue=a%20b");
    expect(badFilter.status).toBe(400);
    expect((await get("workers", { method: "POST" })).status).toBe(405);
  });

  it("lets observers read, and refuses a worker token (403) and no token (401)", async () => {
    const observer = newToken();
    const worker = newToken();
    const { get } = await setup({ observer, worker });
    const as = (t: string) => ({ headers: { authorization: `Bearer ${t}` } });
    expect((await get("workers", as(observer))).status).toBe(200);
    expect((await get("queues/none/explain", as(observer))).status).toBe(404);
    expect((await get("workers", as(worker))).status).toBe(403);
    expect((await get("jobs/1/explain", as(worker))).status).toBe(403);
    expect((await get("workers")).status).toBe(401);
  });
});
