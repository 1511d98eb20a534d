import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, type GrpcStubs, grpcStubs, seconds, unary } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const engines = [
  { engine: "pglite" as const, available: true },
  { engine: "postgres" as const, available: haveService("postgres") && haveService("redis") },
];

for (const { engine, available } of engines) {
  describe.skipIf(!available)(`worker contract over grpc-js stubs (${engine})`, () => {
    let gw: TestGateway;
    let stubs: GrpcStubs;
    let n = 0;
    const queue = () => `wq-${++n}`;
    const enqueue = async (q: string, extra: object = {}) =>
      (await unary(stubs.producer, "Enqueue", { job: { queue: q, payload: Buffer.from("{}"), ...extra } }))
        .job_id as string;
    const getJob = async (id: string) => (await unary(stubs.producer, "GetJob", { job_id: id })).job;

    beforeAll(async () => {
      gw = await startTestGateway({ engine, config: { maintenanceIntervalMs: 100, retryBaseMs: 100 } });
      stubs = grpcStubs(gw.grpcUrl);
    });
    afterAll(async () => {
      stubs.close();
      await gw.stop();
    });

    it("claims, heartbeats and settles a job", async () => {
      const q = queue();
      const id = await enqueue(q, { headers: { trace: "t1" }, priority: 3 });
      const claim = duplex(stubs.worker, "Claim");
      const res = await claim.send({
        queues: [q],
        max_jobs: 10,
        worker_id: "w1",
        lease_duration: seconds(5),
      });
      claim.end();
      expect(res.jobs).toHaveLength(1);
      const job = res.jobs[0];
      expect(job).toMatchObject({ id, queue: q, attempt: 1, priority: 3, headers: { trace: "t1" } });
      expect(Buffer.from(job.payload).toString()).toBe("{}");

      const beat = duplex(stubs.worker, "Heartbeat");
      const hb = await beat.send({ leases: [{ job_id: id, attempt: 1 }], extend_by: seconds(20) });
      beat.end();
      expect(hb.leases[0].state).toBe("LEASE_STATE_EXTENDED");
      const deadline = Number(hb.leases[0].lease_deadline.seconds) * 1000;
      expect(deadline).toBeGreaterThan(Date.now() + 15_000);

      const settle = duplex(stubs.worker, "Settle");
      const out = await settle.send({
        settlements: [{ lease: { job_id: id, attempt: 1 }, success: { result: Buffer.from("ok") } }],
      });
      settle.end();
      expect(out.results[0]).toMatchObject({
        status: "SETTLE_STATUS_ACCEPTED",
        state: "JOB_STATE_SUCCEEDED",
      });
      const info = await getJob(id);
      expect(info.state).toBe("JOB_STATE_SUCCEEDED");
      expect(Buffer.from(info.result).toString()).toBe("ok");
      expect(info.worker_id).toBe("w1");
    });

    it("answers every poll exactly once: empty after max_wait when nothing comes", async () => {
      const claim = duplex(stubs.worker, "Claim");
      const t0 = Date.now();
      const res = await claim.send({ queues: [queue()], max_jobs: 1, max_wait: seconds(0.4) });
      const waited = Date.now() - t0;
      const again = await claim.send({ queues: [queue()], max_jobs: 1 });
      claim.end();
      expect(res.jobs).toEqual([]);
      expect(res.throttled).toEqual([]);
      expect(waited).toBeGreaterThanOrEqual(390);
      expect(waited).toBeLessThan(3000);
      expect(again.jobs).toEqual([]);
    });

    it("returns a job enqueued while a long poll waits, promptly", async () => {
      const q = queue();
      const claim = duplex(stubs.worker, "Claim");
      const t0 = Date.now();
      const pending = claim.send({ queues: [q], max_jobs: 5, max_wait: seconds(20) });
      await new Promise((r) => setTimeout(r, 300));
      const enqueuedAt = Date.now();
      const id = await enqueue(q);
      const res = await pending;
      const answeredAt = Date.now();
      claim.end();
      expect(res.jobs.map((j: { id: string }) => j.id)).toEqual([id]);
      expect(answeredAt - t0).toBeGreaterThanOrEqual(300);
      expect(answeredAt - enqueuedAt).toBeLessThan(2000);
    });

    it("answers a parked long poll at once, empty, when the worker half-closes, and ends the stream", async () => {
      const q = queue();
      const claim = duplex(stubs.worker, "Claim");
      const t0 = Date.now();
      let answered = false;
      const pending = claim.send({ queues: [q], max_jobs: 5, max_wait: seconds(20) });
      pending.then(() => (answered = true));
      await new Promise((r) => setTimeout(r, 300));
      // Still parked: the long poll waits for work while the stream is open.
      expect(answered).toBe(false);
      const closedAt = Date.now();
      claim.end();
      const res = await pending;
      const answeredAt = Date.now();
      expect(res.jobs).toEqual([]);
      expect(answeredAt - t0).toBeGreaterThanOrEqual(300);
      expect(answeredAt - closedAt).toBeLessThan(2000);
      expect((await claim.status).code).toBe(0);
      // The drain took nothing: a job enqueued now waits for the next worker.
      const id = await enqueue(q);
      expect((await getJob(id)).state).toBe("JOB_STATE_QUEUED");
    });

    it("answers a poll sent with the half-close with what is ready, without parking", async () => {
      const q = queue();
      const id = await enqueue(q);
      const claim = duplex(stubs.worker, "Claim");
      const pending = claim.send({ queues: [q], max_jobs: 5, max_wait: seconds(20) });
      claim.end();
      expect((await pending).jobs.map((j: { id: string }) => j.id)).toEqual([id]);
      const t0 = Date.now();
      const empty = duplex(stubs.worker, "Claim");
      const none = empty.send({ queues: [q], max_jobs: 5, max_wait: seconds(20) });
      empty.end();
      expect((await none).jobs).toEqual([]);
      expect(Date.now() - t0).toBeLessThan(2000);
      expect((await empty.status).code).toBe(0);
    });

    it("settling twice with the same outcome answers the same and changes one state", async () => {
      const q = queue();
      const id = await enqueue(q);
      await unary(stubs.worker, "ClaimOnce", { queues: [q], max_jobs: 1 });
      const settle = duplex(stubs.worker, "Settle");
      const entry = {
        lease: { job_id: id, attempt: 1 },
        failure: { type: "Boom", message: "m", retryable: false },
      };
      const first = await settle.send({ settlements: [entry] });
      const after = await getJob(id);
      const second = await settle.send({ settlements: [entry] });
      const conflict = await settle.send({ settlements: [{ lease: entry.lease, success: {} }] });
      settle.end();
      expect(second).toEqual(first);
      expect(first.results[0]).toMatchObject({ status: "SETTLE_STATUS_ACCEPTED", state: "JOB_STATE_FAILED" });
      expect(conflict.results[0].status).toBe("SETTLE_STATUS_CONFLICT");
      expect(await getJob(id)).toEqual(after);
      expect(after.last_error).toMatchObject({ type: "Boom", message: "m", retryable: false });
    });

    it("retries a failure after its own retry_after, as attempt 2", async () => {
      const q = queue();
      const id = await enqueue(q, { max_attempts: 3 });
      await unary(stubs.worker, "ClaimOnce", { queues: [q], max_jobs: 1 });
      const settle = duplex(stubs.worker, "Settle");
      const failure = { type: "Flaky", message: "try later", retryable: true, retry_after: seconds(0.5) };
      const out = await settle.send({ settlements: [{ lease: { job_id: id, attempt: 1 }, failure }] });
      settle.end();
      expect(out.results[0].state).toBe("JOB_STATE_SCHEDULED");
      const t0 = Date.now();
      const claim = duplex(stubs.worker, "Claim");
      let res = await claim.send({ queues: [q], max_jobs: 1, max_wait: seconds(5) });
      while (res.jobs.length === 0)
        res = await claim.send({ queues: [q], max_jobs: 1, max_wait: seconds(5) });
      claim.end();
      expect(Date.now() - t0).toBeGreaterThanOrEqual(350);
      expect(res.jobs[0]).toMatchObject({ id, attempt: 2 });
    });

    it("tells the worker of a cancel at its next heartbeat, and cancels a waiting job at once", async () => {
      const q = queue();
      const running = await enqueue(q);
      await unary(stubs.worker, "ClaimOnce", { queues: [q], max_jobs: 1 });
      const waiting = await enqueue(q);
      const c1 = await unary(stubs.producer, "CancelJob", { job_id: running, reason: "user asked" });
      expect(c1.job).toMatchObject({ state: "JOB_STATE_RUNNING", cancel_requested: true });
      const c2 = await unary(stubs.producer, "CancelJob", { job_id: waiting });
      expect(c2.job).toMatchObject({ state: "JOB_STATE_CANCELLED", outcome: "cancelled" });
      const beat = duplex(stubs.worker, "Heartbeat");
      const hb = await beat.send({ leases: [{ job_id: running, attempt: 1 }] });
      beat.end();
      expect(hb.leases[0].state).toBe("LEASE_STATE_CANCEL_REQUESTED");
      const settle = duplex(stubs.worker, "Settle");
      const out = await settle.send({
        settlements: [{ lease: { job_id: running, attempt: 1 }, cancelled: { reason: "stopped" } }],
      });
      settle.end();
      expect(out.results[0].state).toBe("JOB_STATE_CANCELLED");
    });

    it("returns the first job for a repeated idempotency key", async () => {
      const q = queue();
      const a = await unary(stubs.producer, "Enqueue", { job: { queue: q, idempotency_key: "k" } });
      const b = await unary(stubs.producer, "Enqueue", { job: { queue: q, idempotency_key: "k" } });
      expect(a.duplicate).toBe(false);
      expect(b).toEqual({ job_id: a.job_id, duplicate: true });
    });

    it("enqueues a batch in order and answers GetJob for unknown ids with NOT_FOUND", async () => {
      const q = queue();
      const res = await unary(stubs.producer, "EnqueueBatch", {
        jobs: [{ queue: q, priority: 1 }, { queue: q }, { queue: q, delay: seconds(60) }],
      });
      expect(res.results).toHaveLength(3);
      const states = await Promise.all(res.results.map((r: { job_id: string }) => getJob(r.job_id)));
      expect(states.map((s) => s.state)).toEqual([
        "JOB_STATE_QUEUED",
        "JOB_STATE_QUEUED",
        "JOB_STATE_SCHEDULED",
      ]);
      await expect(unary(stubs.producer, "GetJob", { job_id: "987654321" })).rejects.toMatchObject({
        code: 5,
      });
    });

    it("serves ClaimOnce over Connect JSON for clients that cannot stream", async () => {
      const q = queue();
      const id = await enqueue(q);
      const res = await fetch(`${gw.httpUrl}/taskq.v1.WorkerService/ClaimOnce`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ queues: [q], maxJobs: 1 }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { jobs: { id: string; attempt: number }[] };
      expect(body.jobs).toEqual([expect.objectContaining({ id, attempt: 1 })]);
    });
  });
}
