import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { type GrpcStubs, grpcStubs, unary } from "../testing/grpc-stubs.js";
import { newJob } from "../testing/new-job.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// AdminService.RetryJob through plain grpc-js stubs (the .proto files, no generated code), and its REST
// route POST /api/v1/jobs/:id/retry: one failed job ready again now, operators only.

const secrets = { operator: newToken(), observer: newToken() };
const tokens = Object.entries(secrets).map(([role, secret]) => ({
  name: `t-${role}`,
  roles: [role as "operator" | "observer"],
  queues: null,
  sha256: hashToken(secret),
}));

describe("AdminService.RetryJob", () => {
  let gw: TestGateway;
  let operator: GrpcStubs;
  let observer: GrpcStubs;
  let n = 0;

  /** A job of its own queue that failed for good on its first attempt (of 2). */
  const failedJob = async () => {
    const queue = `retry-rpc-${++n}`;
    await gw.store.jobsEnqueue([newJob(queue, { maxAttempts: 2 })]);
    const [c] = await gw.store.jobsClaim({ queues: [queue], limit: 1, leaseMs: 60_000, workerId: "w" });
    if (!c) throw new Error("nothing claimed");
    await gw.store.jobsSettle([
      {
        jobId: c.id,
        attempt: c.attempt,
        kind: "failure",
        error: { type: "Boom", message: "down", retryable: false },
        delayMs: null,
      },
    ]);
    return { id: c.id, queue };
  };
  const code = (p: Promise<unknown>) =>
    p.then(
      () => ({ code: "OK", details: "" }),
      (err: grpc.ServiceError) => ({ code: grpc.status[err.code], details: err.details }),
    );

  beforeAll(async () => {
    gw = await startTestGateway({ config: { tokens } });
    operator = grpcStubs(gw.grpcUrl, secrets.operator);
    observer = grpcStubs(gw.grpcUrl, secrets.observer);
  });
  afterAll(async () => {
    operator?.close();
    observer?.close();
    await gw?.stop();
  });

  it("an operator retries a failed job: it is queued now with its budget again; audited as the token", async () => {
    const { id, queue } = await failedJob();
    const res = await unary(operator.admin, "RetryJob", { job_id: id });
    expect(res.job).toMatchObject({ id, queue, state: "JOB_STATE_QUEUED", attempt: 1, max_attempts: 3 });
    const got = await unary(operator.producer, "GetJob", { job_id: id });
    expect(got.job).toMatchObject({ state: "JOB_STATE_QUEUED", outcome: "", finished_at: null });
    const audit = await unary(operator.admin, "ListQueueAudit", { queue });
    expect(audit.entries).toHaveLength(1);
    expect(audit.entries[0]).toMatchObject({ event_type: "job.retry", actor: "t-operator" });
    // Again: it is no longer failed.
    expect(await code(unary(operator.admin, "RetryJob", { job_id: id }))).toEqual({
      code: "FAILED_PRECONDITION",
      details: `job ${id} is queued, not failed: only a failed job can be retried`,
    });
  });

  it("refuses an observer, an unknown job and a bad id, and writes nothing", async () => {
    const { id, queue } = await failedJob();
    expect((await code(unary(observer.admin, "RetryJob", { job_id: id }))).code).toBe("PERMISSION_DENIED");
    expect(await code(unary(operator.admin, "RetryJob", { job_id: "987654321" }))).toEqual({
      code: "NOT_FOUND",
      details: "job 987654321 not found",
    });
    for (const bad of ["", "abc", "0", "-1", "9223372036854775808"]) {
      const got = await code(unary(operator.admin, "RetryJob", { job_id: bad }));
      expect(got.code, bad).toBe("INVALID_ARGUMENT");
      expect(got.details, bad).toMatch(/^job_id must be a job id/);
    }
    expect((await unary(operator.producer, "GetJob", { job_id: id })).job.state).toBe("JOB_STATE_FAILED");
    expect((await unary(operator.admin, "ListQueueAudit", { queue })).entries).toEqual([]);
  });

  it("REST POST /api/v1/jobs/:id/retry: the RPC's answer as JSON, and its errors", async () => {
    const { id } = await failedJob();
    const post = (jobId: string, secret: string | null = secrets.operator, method = "POST") =>
      fetch(`${gw.httpUrl}/api/v1/jobs/${jobId}/retry`, {
        method,
        headers: secret ? { authorization: `Bearer ${secret}` } : {},
      });
    const denied = await post(id, secrets.observer);
    expect(denied.status).toBe(403);
    expect((await post(id, null)).status).toBe(401);
    const wrongMethod = await post(id, secrets.operator, "GET");
    expect(wrongMethod.status).toBe(405);
    const ok = await post(id);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ job: { id, state: "JOB_STATE_QUEUED", maxAttempts: 3 } });
    const again = await post(id);
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({
      error: {
        code: "failed_precondition",
        message: `job ${id} is queued, not failed: only a failed job can be retried`,
      },
    });
    expect((await post("987654321")).status).toBe(404);
    const bad = await post("x1");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/^job_id must be/);
  });
});
