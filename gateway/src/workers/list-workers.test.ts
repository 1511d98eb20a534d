import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { Client, createTransport, Worker } from "@taskq/sdk";
import { AdminService, WorkerService } from "@taskq/sdk/proto";
import { describe, expect, it, onTestFinished } from "vitest";
import { WorkerStore } from "../store/worker-store.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const FLUSH_MS = 200;
const services = haveService("postgres") && haveService("redis");

/** Two gateways on one fresh Postgres, writing their worker records every FLUSH_MS. */
async function setup() {
  const config = { workerRecordsFlushMs: FLUSH_MS };
  const a = await startTestGateway({ engine: "postgres", config });
  const gateways: TestGateway[] = [a];
  onTestFinished(async () => {
    for (const g of gateways.reverse()) await g.stop();
  });
  const b = await startTestGateway({ databaseUrl: a.databaseUrl ?? "", config });
  gateways.push(b);
  const admin = createClient(AdminService, createTransport({ baseUrl: a.grpcUrl }));
  const worker = (g: TestGateway, workerId: string, queues: string[], handler = async () => {}) => {
    const w = new Worker({ baseUrl: g.grpcUrl, workerId, queues, concurrency: 2, maxWaitMs: 1000, handler });
    onTestFinished(() => w.stop());
    return w;
  };
  /** Polls ListWorkers until `done` holds of the list (or `withinMs` passes); returns when it did. */
  const until = async (done: (ids: string[]) => boolean, withinMs: number) => {
    const start = performance.now();
    for (;;) {
      const { workers } = await admin.listWorkers({});
      if (done(workers.map((w) => w.workerId))) return performance.now() - start;
      if (performance.now() - start > withinMs) throw new Error(`not within ${withinMs} ms: ${workers}`);
      await sleep(20);
    }
  };
  return { a, b, admin, worker, until };
}

describe.skipIf(!services)("ListWorkers: the workers connected to the fleet", () => {
  it("lists two workers on two gateways with their queues; a stopped one is gone within a flush", async () => {
    const { a, b, admin, worker, until } = await setup();
    const w1 = worker(a, "worker-one", ["lw-mail", "lw-sms"]);
    const w2 = worker(b, "worker-two", ["lw-mail"]);
    await Promise.all([w1.start(), w2.start()]);
    // Each gateway writes its records every FLUSH_MS: both are listed within a few flushes.
    await until((ids) => ids.includes("worker-one") && ids.includes("worker-two"), 5 * FLUSH_MS + 2000);
    const { workers } = await admin.listWorkers({});
    const one = workers.find((w) => w.workerId === "worker-one");
    const two = workers.find((w) => w.workerId === "worker-two");
    expect(one?.gatewayId).toBe(a.instanceId);
    expect(two?.gatewayId).toBe(b.instanceId);
    expect([...(one?.queues ?? [])].sort()).toEqual(["lw-mail", "lw-sms"]);
    expect(two?.queues).toEqual(["lw-mail"]);
    // Idle in a long poll: it asks for all its slots, and says how many it has (SDK workers do).
    expect(one).toMatchObject({ streams: 1, held: 0, maxJobs: 2, concurrency: 2, prefetch: 0 });
    // A worker waiting in a long poll is polling now.
    const polled = Number(one?.lastPollAt?.seconds ?? 0n) * 1000;
    expect(Date.now() - polled).toBeLessThan(5 * FLUSH_MS + 1000);
    // The queue filter keeps the workers polling it.
    const sms = await admin.listWorkers({ queue: "lw-sms" });
    expect(sms.workers.map((w) => w.workerId)).toEqual(["worker-one"]);

    // Stopped: its stream closes, and its gateway's next flush drops it (docs: within workerRecordsFlushMs).
    await w1.stop();
    const took = await until((ids) => !ids.includes("worker-one"), FLUSH_MS + 1000);
    expect(took).toBeLessThanOrEqual(FLUSH_MS + 1000);
    expect((await admin.listWorkers({})).workers.map((w) => w.workerId)).toEqual(["worker-two"]);
  });

  it("counts the jobs a worker holds and the verdicts it was given in the last minute", async () => {
    const { a, admin, worker } = await setup();
    const producer = new Client({ baseUrl: a.grpcUrl });
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const w = worker(a, "holder", ["lw-held"], () => gate);
    for (let i = 0; i < 3; i++) await producer.enqueue({ queue: "lw-held" });
    await w.start();
    // Two slots: it holds two jobs (running) and the third waits.
    let held = 0;
    for (let i = 0; i < 100 && held < 2; i++) {
      held = (await admin.listWorkers({ queue: "lw-held" })).workers[0]?.held ?? 0;
      await sleep(FLUSH_MS / 2);
    }
    expect(held).toBe(2);
    await admin.pauseQueue({ queue: "lw-held" });
    release();
    let paused = 0n;
    for (let i = 0; i < 100 && paused === 0n; i++) {
      paused = (await admin.listWorkers({ queue: "lw-held" })).workers[0]?.verdictsLastMinute.PAUSED ?? 0n;
      await sleep(FLUSH_MS / 2);
    }
    expect(paused).toBeGreaterThanOrEqual(1n);
  });

  it("lists a ClaimOnce caller (no stream) by its worker id", async () => {
    const { a, until } = await setup();
    const rpc = createClient(WorkerService, createTransport({ baseUrl: a.grpcUrl }));
    await rpc.claimOnce({ queues: ["lw-once"], maxJobs: 3, workerId: "curl-worker" });
    await until((ids) => ids.includes("curl-worker"), 5 * FLUSH_MS + 1000);
  });

  it("a gateway that stops writing (it died): its workers lapse after 3 flushes and are pruned", async () => {
    const { a, admin } = await setup();
    const store = new WorkerStore(a.store.db);
    const report = {
      worker_id: "orphan",
      queues: ["lw-orphan"],
      streams: 1,
      max_jobs: 1,
      concurrency: null,
      prefetch: null,
      last_poll_ms: Date.now(),
      verdicts: {},
    };
    // What a gateway writing every FLUSH_MS leaves behind as its last write: rows lapsing in 3 flushes.
    await store.workersFlush("dead-gateway", [report], 3 * FLUSH_MS);
    const ids = async () => (await admin.listWorkers({})).workers.map((w) => w.workerId);
    expect(await ids()).toContain("orphan");
    await sleep(3 * FLUSH_MS + 50);
    expect(await ids()).not.toContain("orphan");
    // Any gateway's next flush prunes the row.
    await sleep(2 * FLUSH_MS);
    const rows = await a.store.db.query<{ n: number }>(
      { name: "", text: "select count(*)::int as n from taskq.workers where gateway_id = 'dead-gateway'" },
      [],
    );
    expect(rows[0]?.n).toBe(0);
  });

  it("refuses a bad queue name with INVALID_ARGUMENT naming the field", async () => {
    const { admin } = await setup();
    const err = await admin.listWorkers({ queue: "no spaces" }).catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/^queue/);
  });
});
