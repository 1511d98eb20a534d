import { Code, ConnectError } from "@connectrpc/connect";
import { RetryAfterError, Worker } from "@taskq/sdk";
import { JobState, ThrottleReason } from "@taskq/sdk/proto";
import { describe, expect, it, onTestFinished } from "vitest";
import { explainSetup, ms, reasonOf, until } from "../testing/explain-harness.js";
import { haveService, testRedis } from "../testing/services.js";

const services = haveService("postgres") && haveService("redis");

/** As explain-gates.test.ts: the job starts at most 100 ms before its estimate and `lateMs` after it. */
function expectOnTime(estimateMs: number, actualMs: number, lateMs = 1000) {
  expect(actualMs).toBeGreaterThanOrEqual(estimateMs - 100);
  expect(actualMs).toBeLessThanOrEqual(estimateMs + lateMs);
}

describe.skipIf(!services)("explain: before and after the gates", () => {
  it("scheduled: a retry's backoff, with its attempt and error; it starts at its run_at", async () => {
    const s = await explainSetup();
    await s.worker(async (job) => {
      if (job.attempt === 1) throw new RetryAfterError("downstream said wait", 2000);
    });
    const id = await s.enqueue({ maxAttempts: 3 });
    await until(async () => (await s.rpc.getJob({ jobId: id })).job?.state === JobState.SCHEDULED, 10_000);
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("scheduled");
    const r = reasonOf(e, "scheduled");
    expect(r.figures).toMatchObject({ why: "retry", attempt: 1, max_attempts: 3 });
    expect(r.summary).toMatch(/^retry 2 of 3 after a failure \(RetryAfterError: downstream said wait\)/);
    expect(ms(e.estimatedStart)).toBe(Date.parse(String(r.figures?.run_at)));
    expectOnTime(ms(e.estimatedStart), await s.startedAt(id, 10_000, 2));
    // A job enqueued with a delay says so.
    const later = await s.explain(await s.enqueue({ delayMs: 60_000 }));
    expect(reasonOf(later, "scheduled").figures?.why).toBe("enqueue");
  });

  it("position: jobs ahead in claim order, aging credit and its next step, the queue's pace", async () => {
    const s = await explainSetup();
    await s.admin.ensureQueue({ queue: s.queue, profile: { priority_aging_seconds: 60 } });
    await s.worker(() => new Promise((r) => setTimeout(r, 400)));
    // One job run to the end first: the queue's average run time (400 ms) is then known.
    await s.startedAt(await s.enqueue());
    await until(
      async () => (await s.admin.listJobs({ queue: s.queue, state: JobState.SUCCEEDED })).total > 0n,
      3000,
    );
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await s.enqueue());
    const last = ids[3] ?? "";
    await s.startedAt(ids[0] ?? "");
    const e = await s.explain(last);
    expect(e.firstBlocking).toBe("position");
    const r = reasonOf(e, "position");
    expect(r.figures).toMatchObject({ ahead: 2, priority: 0, aging_seconds: 60, aging_credit: 0 });
    const info = (await s.rpc.getJob({ jobId: last })).job;
    expect(Date.parse(String(r.figures?.next_step_at))).toBe(ms(info?.runAt) + 60_000);
    // Two jobs ahead at 400 ms each; the one running now may need up to another run: 400 ms more.
    expectOnTime(ms(e.estimatedStart), await s.startedAt(last), 1400);
  });

  it("TTL: when it expires, and that it will before its estimated start", async () => {
    const s = await explainSetup();
    await s.admin.ensureQueue({ queue: s.queue });
    await s.admin.setQueueThrottle({ queue: s.queue, limit: 1, periodMs: 4000 });
    await s.worker();
    await s.startedAt(await s.enqueue());
    const id = await s.enqueue({ ttlSeconds: 1 });
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("throttle");
    const r = reasonOf(e, "ttl");
    const info = (await s.rpc.getJob({ jobId: id })).job;
    expect(Date.parse(String(r.figures?.expires_at))).toBe(ms(info?.expiresAt));
    expect(r.figures?.expires_before_estimate).toBe(true);
    expect(ms(e.estimatedStart)).toBeGreaterThan(ms(info?.expiresAt));
    // And so it does: cancelled, expired_ttl, never started.
    await until(async () => (await s.rpc.getJob({ jobId: id })).job?.state === JobState.CANCELLED, 10_000);
    const done = (await s.rpc.getJob({ jobId: id })).job;
    expect(done).toMatchObject({ outcome: "expired_ttl", attempt: 0 });
  });

  it("no worker has polled the queue: no estimate; a worker of another queue does not count", async () => {
    const s = await explainSetup();
    const other = await explainSetup();
    await other.worker();
    const id = await s.enqueue();
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("workers");
    expect(reasonOf(e, "workers").figures).toMatchObject({
      workers: 0,
      last_poll_at: null,
      window_minutes: 5,
    });
    expect(e.estimatedStart).toBeUndefined();
    expect(e.summary).toMatch(
      /^no estimate: nothing is claiming this queue; first blocking: workers: no worker/,
    );
    await s.worker();
    await s.startedAt(id, 10_000);
  });

  it("a job held by two gates at once (paused and throttled) lists both, in gate order", async () => {
    const s = await explainSetup();
    await s.admin.ensureQueue({ queue: s.queue });
    await s.admin.setQueueThrottle({ queue: s.queue, limit: 1, periodMs: 60_000 });
    await s.worker();
    await s.startedAt(await s.enqueue());
    await s.admin.pauseQueue({ queue: s.queue });
    const e = await s.explain(await s.enqueue());
    const blocking = e.reasons.filter((r) => r.blocking);
    expect(blocking.map((r) => [r.gate, r.verdict])).toEqual([
      ["paused", ThrottleReason.PAUSED],
      ["throttle", ThrottleReason.THROTTLE],
    ]);
    expect(e.firstBlocking).toBe("paused");
  });

  it("changes nothing: the throttle slot, rate tokens, the job and the audit log are as before", async () => {
    const s = await explainSetup();
    await s.admin.ensureQueue({ queue: s.queue, profile: { claim_rate_per_minute: 6, claim_burst: 2 } });
    await s.admin.setQueueThrottle({ queue: s.queue, limit: 1, periodMs: 60_000 });
    await s.worker();
    await s.startedAt(await s.enqueue());
    const id = await s.enqueue();
    const redis = testRedis();
    onTestFinished(() => void redis.quit());
    const state = async () => ({
      slot: await redis.hgetall(`taskq:{throttle:${s.queue}}`),
      tokens: await redis.get(`taskq:{rate:queue:${s.queue}}`),
      job: (await s.rpc.getJob({ jobId: id })).job,
      audit: (await s.admin.listQueueAudit({ queue: s.queue })).entries,
    });
    const before = await state();
    expect(before.slot.next).toBeDefined();
    expect(before.tokens).not.toBeNull();
    for (let i = 0; i < 5; i++) {
      expect((await s.explain(id)).firstBlocking).toBe("throttle");
      await s.admin.explainQueue({ queue: s.queue });
    }
    expect(await state()).toEqual(before);
  });

  it("a running job: its attempt and lease; with prefetch, that it waits in the worker's buffer", async () => {
    const s = await explainSetup();
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    onTestFinished(() => release());
    const buffered = new Worker({
      baseUrl: s.gw.grpcUrl,
      workerId: "prefetcher",
      queues: [s.queue],
      concurrency: 1,
      prefetch: 2,
      maxWaitMs: 1000,
      handler: () => held,
      shutdownGraceMs: 0,
    });
    onTestFinished(() => buffered.stop());
    const ids = [await s.enqueue(), await s.enqueue(), await s.enqueue()];
    await buffered.start();
    for (const id of ids) await s.startedAt(id);
    await until(async () => (await s.admin.listWorkers({ queue: s.queue })).workers[0]?.held === 3, 3000);
    const first = await s.explain(ids[0] ?? "");
    expect(first).toMatchObject({
      state: JobState.RUNNING,
      workerId: "prefetcher",
      attempt: 1,
      firstBlocking: "",
    });
    expect(ms(first.leaseDeadline)).toBeGreaterThan(Date.now());
    expect(reasonOf(first, "lease").figures).toMatchObject({ attempt: 1, worker_id: "prefetcher" });
    expect(reasonOf(first, "prefetch").figures).toMatchObject({
      job_slots: 1,
      claimed_before_and_running: 0,
      buffered: false,
    });
    const third = await s.explain(ids[2] ?? "");
    expect(third.firstBlocking).toBe("prefetch");
    expect(reasonOf(third, "prefetch").figures).toMatchObject({
      job_slots: 1,
      claimed_before_and_running: 2,
      buffered: true,
    });
    expect(third.summary).toMatch(/prefetch buffer/);
  });

  it("a finished job: how it ended, its attempts and last error", async () => {
    const s = await explainSetup();
    await s.worker(async () => {
      throw new Error("no such customer");
    });
    const id = await s.enqueue({ maxAttempts: 1 });
    await until(async () => (await s.rpc.getJob({ jobId: id })).job?.state === JobState.FAILED, 10_000);
    const e = await s.explain(id);
    expect(e).toMatchObject({ state: JobState.FAILED, attempt: 1, maxAttempts: 1, reasons: [] });
    expect(e.lastError?.message).toBe("no such customer");
    expect(e.summary).toMatch(/^failed at .* after 1 attempt of 1; last error Error: no such customer$/);
  });

  it("queue explain: the queue's next job, or with none waiting what would hold one back", async () => {
    const s = await explainSetup();
    await s.admin.ensureQueue({ queue: s.queue });
    await s.admin.pauseQueue({ queue: s.queue });
    const empty = (await s.admin.explainQueue({ queue: s.queue })).explanation;
    expect(empty).toMatchObject({ jobId: "", firstBlocking: "paused" });
    expect(empty?.summary).toMatch(/^no job waits in this queue; first blocking: paused/);
    await s.enqueue({ priority: 1 });
    const best = await s.enqueue({ priority: 5 });
    const next = (await s.admin.explainQueue({ queue: s.queue })).explanation;
    expect(next).toMatchObject({ jobId: best, state: JobState.QUEUED, firstBlocking: "paused" });
  });

  it("refuses bad input naming the field, and says NOT_FOUND for what does not exist", async () => {
    const s = await explainSetup();
    const code = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: unknown) => [ConnectError.from(e).code, ConnectError.from(e).rawMessage.split(" ")[0]],
      );
    expect(await code(s.admin.explainJob({ jobId: "abc" }))).toEqual([Code.InvalidArgument, "job_id"]);
    expect(await code(s.admin.explainJob({ jobId: "987654321" }))).toEqual([Code.NotFound, "job"]);
    expect(await code(s.admin.explainQueue({ queue: "bad name" }))).toEqual([Code.InvalidArgument, "queue"]);
    expect(await code(s.admin.explainQueue({ queue: "never-seen" }))).toEqual([Code.NotFound, "queue"]);
  });
});
