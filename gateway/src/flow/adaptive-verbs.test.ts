import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport, Worker } from "@taskq/sdk";
import { AdminService, ProducerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../testing/explain-harness.js";
import { operatorRun } from "../testing/operator-run.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// The adaptive limit through every way in (RPC, REST, CLI) and every way it shows (queue flow, health
// detail, explain, metric, history), on a real embedded gateway whose maintenance loop runs the
// controller.

let gw: TestGateway;
let admin: ReturnType<typeof createClient<typeof AdminService>>;
beforeAll(async () => {
  gw = await startTestGateway();
  const transport = createTransport({ baseUrl: gw.grpcUrl });
  admin = createClient(AdminService, transport);
});
afterAll(async () => {
  await gw?.stop();
});

const taskq = (...argv: string[]) => operatorRun(argv, { TASKQ_URL: gw.grpcUrl });
const rest = (queue: string, body: string) =>
  fetch(`${gw.httpUrl}/api/v1/queues/${queue}/adaptive`, { method: "PUT", body });
const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => ConnectError.from(e),
  );

describe("adaptive max_running: verbs", () => {
  it("RPC: on, refused input naming the field (nothing written), off restoring the cap", async () => {
    await admin.ensureQueue({ queue: "rpc-adaptive", profile: { max_running: 8 } });
    const bad = await errorOf(
      admin.setAdaptiveConcurrency({ queue: "rpc-adaptive", min: 10, max: 5, targetLatencyMs: 500 }),
    );
    expect(bad?.code).toBe(Code.InvalidArgument);
    expect(bad?.rawMessage).toBe("max must be at least min (10, got 5)");
    const unset = await errorOf(admin.setAdaptiveConcurrency({ queue: "rpc-adaptive", min: 2, max: 5 }));
    expect(unset?.rawMessage).toBe("target_latency_ms is required with min");
    expect((await admin.listQueueAudit({ queue: "rpc-adaptive" })).entries.map((e) => e.eventType)).toEqual([
      "queue.ensure",
    ]);

    const on = await admin.setAdaptiveConcurrency({
      queue: "rpc-adaptive",
      min: 2,
      max: 200,
      targetLatencyMs: 500,
    });
    expect(on.queue?.maxRunning).toBe(2);
    expect(on.queue?.adaptive).toMatchObject({
      min: 2,
      max: 200,
      targetLatencyMs: 500,
      fixedMaxRunning: 8,
      slowStart: true,
      reason: "turned on by anonymous: starts at min 2",
    });
    const [flow] = (await admin.queueFlow({ queue: "rpc-adaptive" })).queues;
    expect(flow?.adaptive?.min).toBe(2);
    const [health] = (await admin.queueHealth({ queue: "rpc-adaptive" })).rows;
    expect(health?.detail).toMatchObject({
      adaptive: { limit: 2, min: 2, max: 200, target_latency_ms: 500 },
    });
    const metrics = await (await fetch(`${gw.httpUrl}/metrics`)).text();
    expect(metrics).toContain('taskq_adaptive_max_running{queue="rpc-adaptive"} 2');

    const off = await admin.setAdaptiveConcurrency({ queue: "rpc-adaptive" });
    expect(off.queue?.maxRunning).toBe(8);
    expect(off.queue?.adaptive).toBeUndefined();
    const changes = (await admin.listAdaptiveChanges({ queue: "rpc-adaptive" })).changes;
    expect(changes.map((c) => [c.limitBefore, c.limitAfter, c.reason])).toEqual([
      [2, 8, "turned off by anonymous"],
      [8, 2, "turned on by anonymous: starts at min 2"],
    ]);
    const audit = (await admin.listQueueAudit({ queue: "rpc-adaptive" })).entries.map((e) => e.eventType);
    expect(audit).toEqual(["queue.adaptive_concurrency", "queue.adaptive_concurrency", "queue.ensure"]);
  });

  it("REST PUT .../adaptive: on, a bad field named with 400, {min: null} off", async () => {
    await admin.ensureQueue({ queue: "rest-adaptive" });
    const bad = await rest("rest-adaptive", JSON.stringify({ min: "2", max: 20, target_latency_ms: 500 }));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(
      /^min must be a number/,
    );
    const zero = await rest("rest-adaptive", JSON.stringify({ min: 0, max: 20, target_latency_ms: 500 }));
    expect(((await zero.json()) as { error: { message: string } }).error.message).toBe(
      "min must be from 1 to 1000000 (got 0)",
    );
    const on = await rest("rest-adaptive", JSON.stringify({ min: 3, max: 20, target_latency_ms: 500 }));
    expect(on.status).toBe(200);
    expect(await on.json()).toMatchObject({
      queue: "rest-adaptive",
      settings: {
        max_running: 3,
        adaptive: { min: 3, max: 20, target_latency_ms: 500, fixed_max_running: null },
      },
    });
    const off = await rest("rest-adaptive", JSON.stringify({ min: null }));
    expect(await off.json()).toMatchObject({ settings: { max_running: null, adaptive: null } });
  });

  it("CLI set-adaptive / --off / adaptive-history", async () => {
    await admin.ensureQueue({ queue: "cli-adaptive", profile: { max_running: 4 } });
    const on = await taskq(
      "queue",
      "set-adaptive",
      "cli-adaptive",
      "--min",
      "2",
      "--max",
      "200",
      "--target-latency-ms",
      "500",
    );
    expect(on.code).toBe(0);
    expect(on.stdout).toMatch(/^max_running: +2$/m);
    expect(on.stdout).toMatch(/^adaptive: +2\.\.200, target 500 ms \(slow start\)$/m);
    expect(on.stdout).toMatch(/^adaptive_fixed_max_running: +4$/m);
    const flow = await taskq("queue", "flow", "cli-adaptive");
    expect(flow.stdout).toMatch(/^max_running: +2$/m);
    expect(flow.stdout).toMatch(/^adaptive: +2\.\.200, target 500 ms$/m);
    expect(flow.stdout).toMatch(/^adaptive_reason: +turned on by anonymous: starts at min 2$/m);
    const both = await taskq("queue", "set-adaptive", "cli-adaptive", "--off", "--max", "3");
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain("--off takes no other flags (got --max)");
    expect((await taskq("queue", "set-adaptive", "cli-adaptive")).stderr).toContain(
      "give exactly one of --min and --off",
    );
    const off = await taskq("queue", "set-adaptive", "cli-adaptive", "--off");
    expect(off.stdout).toMatch(/^max_running: +4$/m);
    const history = await taskq("queue", "adaptive-history", "cli-adaptive");
    const lines = history.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^AT\s+FROM\s+TO\s+REASON$/);
    expect(lines[1]).toMatch(/\s2\s+4\s+turned off by anonymous$/);
    expect(lines[2]).toMatch(/\s4\s+2\s+turned on by anonymous: starts at min 2$/);
  });

  it("explain says where the limit stands and why, once the controller has read slow settles", async () => {
    const q = "explain-adaptive";
    await admin.ensureQueue({ queue: q });
    await admin.setAdaptiveConcurrency({ queue: q, min: 2, max: 200, targetLatencyMs: 500 });
    const producer = createClient(ProducerService, createTransport({ baseUrl: gw.grpcUrl }));
    for (let i = 0; i < 2; i++) await producer.enqueue({ job: { queue: q } });
    const worker = new Worker({
      baseUrl: gw.grpcUrl,
      queues: [q],
      concurrency: 2,
      handler: () => new Promise((r) => setTimeout(r, 650)),
    });
    await worker.start();
    try {
      // The maintenance loop decides about once a second: at min already, the slow settles hold it there.
      await until(async () => {
        const reason = (await admin.getQueue({ queue: q })).queue?.adaptive?.reason ?? "";
        return /^latency \d+ ms over target 500, at min 2$/.test(reason);
      }, 10_000);
    } finally {
      await worker.stop();
    }
    const { explanation } = await admin.explainQueue({ queue: q });
    const gate = explanation?.reasons.find((r) => r.gate === "max_running");
    expect(gate?.summary).toMatch(
      /; max_running 2 of adaptive 2\.\.200: latency (6[5-9]\d|[7-9]\d\d|\d{4,}) ms over target 500, at min 2$/,
    );
  });
});
