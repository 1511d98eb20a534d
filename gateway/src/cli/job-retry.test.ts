import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { operatorRun } from "../testing/operator-run.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// `taskq job retry <id>`: a failed job back to its queue, ready now; the job as a list of fields for
// people, RetryJobResponse with --json; a job that is not failed is refused saying its state.

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(async () => {
  await gateway?.stop();
});

const taskq = (...argv: string[]) => operatorRun(argv, { TASKQ_URL: gateway.grpcUrl });

/** A job of `queue` that failed for good on its first attempt (of 2). */
async function failedJob(queue: string): Promise<string> {
  await gateway.store.jobsEnqueue([newJob(queue, { maxAttempts: 2 })]);
  const [c] = await gateway.store.jobsClaim({ queues: [queue], limit: 1, leaseMs: 60_000, workerId: "w" });
  if (!c) throw new Error("nothing claimed");
  await gateway.store.jobsSettle([
    {
      jobId: c.id,
      attempt: c.attempt,
      kind: "failure",
      error: { type: "Boom", message: "down", retryable: false },
      delayMs: null,
    },
  ]);
  return c.id;
}

describe("taskq job retry", () => {
  it("retries a failed job: its fields for people, then refuses it again saying it is queued", async () => {
    const id = await failedJob("cli-retry");
    const done = await taskq("job", "retry", id);
    expect(done).toMatchObject({ code: 0, stderr: "" });
    expect(done.stdout).toMatch(new RegExp(`^id:\\s+${id}$`, "m"));
    expect(done.stdout).toMatch(/^state:\s+queued$/m);
    expect(done.stdout).toMatch(/^attempt:\s+1 of 3$/m);

    const again = await taskq("job", "retry", id);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`job ${id} is queued, not failed: only a failed job can be retried`);
  });

  it("--json prints RetryJobResponse; an unknown job and a bad id are errors naming them", async () => {
    const id = await failedJob("cli-retry-json");
    const done = await taskq("job", "retry", id, "--json");
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({
      job: { id, queue: "cli-retry-json", state: "JOB_STATE_QUEUED", attempt: 1, maxAttempts: 3 },
    });
    const unknown = await taskq("job", "retry", "987654321");
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain("job 987654321 not found");
    const bad = await taskq("job", "retry", "abc");
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("job_id must be a job id");
  });

  it("--help says what it does", async () => {
    const help = await taskq("job", "retry", "--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/taskq job retry <id>/);
    expect(help.stdout).toMatch(/Retry a failed job now/);
    expect((await taskq("job", "--help")).stdout).toMatch(/^\s+retry\s+Retry a failed job now/m);
  });
});
