import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, ProducerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { knownQueues } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

/** The operator plane's reads over gRPC: audit log paging and prune, queue_health, queue_counters. */
describe("AdminService reads", () => {
  let gateway: TestGateway;
  const clients = () => {
    const transport = createTransport({ baseUrl: gateway.grpcUrl });
    return {
      admin: createClient(AdminService, transport),
      producer: createClient(ProducerService, transport),
    };
  };
  const code = (p: Promise<unknown>) =>
    p.then(
      () => null,
      (e: unknown) => ({ code: ConnectError.from(e).code, message: ConnectError.from(e).rawMessage }),
    );

  beforeAll(async () => {
    gateway = await startTestGateway();
    // The queues the verbs below act on exist (a verb refuses a queue never seen), with no audit rows.
    await knownQueues(gateway.store.db, "audited", "pruned", "tripped");
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  it("ListQueueAudit: newest first, 50 by default, pages with before_id; range errors name the field", async () => {
    const { admin } = clients();
    for (let i = 1; i <= 55; i++) await admin.setPriorityAging({ queue: "audited", agingSeconds: i });
    await admin.pauseQueue({ queue: "audited" });

    const page1 = (await admin.listQueueAudit({ queue: "audited" })).entries;
    expect(page1).toHaveLength(50);
    expect(page1[0]).toMatchObject({ eventType: "queue.pause" });
    expect(page1[0]?.actor).toBeTruthy();
    expect(page1[0]?.detail).toMatchObject({ before: { paused: false }, after: { paused: true } });
    expect(page1[0]?.createdAt?.seconds).toBeGreaterThan(0n);
    expect(page1[1]?.detail).toMatchObject({ after: { priority_aging_seconds: 55 } });
    const ids = page1.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)));

    const last = ids.at(-1) ?? 0n;
    const page2 = (await admin.listQueueAudit({ queue: "audited", beforeId: last })).entries;
    expect(page2).toHaveLength(6);
    expect(page2.every((e) => e.id < last)).toBe(true);
    expect((await admin.listQueueAudit({ queue: "audited", limit: 2 })).entries).toHaveLength(2);

    await admin.setFlowLimit({ flowKey: "provider.acme", ratePerMinute: 60 });
    expect((await admin.listQueueAudit({ queue: "flow:provider.acme" })).entries).toEqual([
      expect.objectContaining({ eventType: "flow.set_limit" }),
    ]);

    expect(await code(admin.listQueueAudit({ queue: "audited", limit: 1001 }))).toMatchObject({
      code: Code.InvalidArgument,
      message: expect.stringMatching(/^limit must be from 1 to 1000/),
    });
    expect(await code(admin.listQueueAudit({ queue: "bad name" }))).toMatchObject({
      code: Code.InvalidArgument,
      message: expect.stringMatching(/^queue /),
    });
  });

  it("PruneQueueAudit returns the count removed; older_than_hours 0 is refused", async () => {
    const { admin } = clients();
    await admin.pauseQueue({ queue: "pruned" });
    expect((await admin.pruneQueueAudit({ olderThanHours: 2160 })).removed).toBe(0n);
    expect(await code(admin.pruneQueueAudit({ olderThanHours: 0 }))).toMatchObject({
      code: Code.InvalidArgument,
      message: expect.stringMatching(/^older_than_hours must be from 1/),
    });
    expect((await admin.listQueueAudit({ queue: "pruned" })).entries).toHaveLength(1);
  });

  it("QueueHealth and QueueCounters, for one queue or all", async () => {
    const { admin, producer } = clients();
    await producer.enqueue({ job: { queue: "observed", payload: new Uint8Array(0) } });
    await producer.enqueue({ job: { queue: "observed", payload: new Uint8Array(0) } });
    await admin.setBreakerConfig({ queue: "tripped", failureThreshold: 3, cooldownSeconds: 60 });
    await admin.tripBreaker({ queue: "tripped" });

    const one = (await admin.queueHealth({ queue: "observed" })).rows;
    expect(one).toEqual([
      expect.objectContaining({
        queue: "observed",
        verdict: "healthy",
        detail: expect.objectContaining({ levels: { queued: 2, scheduled: 0, running: 0 }, breaker: null }),
      }),
    ]);
    const all = (await admin.queueHealth({})).rows;
    expect(all.find((r) => r.queue === "tripped")).toMatchObject({
      verdict: "breaker_open",
      detail: { breaker: { state: "open", opened_total: 1 } },
    });
    expect(all.map((r) => r.queue)).toEqual([...all.map((r) => r.queue)].sort());

    const counters = (await admin.queueCounters({ queue: "observed" })).rows;
    expect(counters).toHaveLength(1);
    expect(counters[0]).toMatchObject({
      queue: "observed",
      queued: 2n,
      scheduled: 0n,
      running: 0n,
      succeededLastMinute: 0n,
      failedLastHour: 0n,
    });
    expect(counters[0]?.oldestReadySeconds).toBeGreaterThanOrEqual(0);
    expect((await admin.queueCounters({})).rows.map((r) => r.queue)).toEqual(
      expect.arrayContaining(["observed", "tripped", "audited"]),
    );
    expect((await admin.queueCounters({ queue: "nothing" })).rows).toEqual([]);
    const flow = (await admin.queueFlow({})).queues;
    expect(flow.find((q) => q.name === "tripped")?.breaker).toMatchObject({ openedTotal: 1 });
    expect((await admin.queueFlow({ queue: "tripped" })).queues.map((q) => q.name)).toEqual(["tripped"]);
    expect(await code(admin.queueFlow({ queue: "nothing" }))).toMatchObject({ code: Code.NotFound });
    const metrics = await (await fetch(`${gateway.httpUrl}/metrics`)).text();
    expect(metrics).toContain('taskq_breaker_state{queue="tripped",state="open"} 1');
    expect(metrics).toContain('taskq_breaker_state{queue="tripped",state="closed"} 0');
    expect(metrics).not.toContain('taskq_breaker_state{queue="observed"');
    expect(await code(admin.queueHealth({ queue: "bad name" }))).toMatchObject({
      code: Code.InvalidArgument,
    });
  });
});
