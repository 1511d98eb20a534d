import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { ProducerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorRun } from "../testing/operator-run.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// `taskq job get` shows the job's attempts: a table for people, GetJobResponse.attempts with --json.

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(async () => {
  await gateway?.stop();
});

const taskq = (...argv: string[]) => operatorRun(argv, { TASKQ_URL: gateway.grpcUrl });

describe("taskq job get: attempts", () => {
  it("lists two failed attempts with their errors, then the succeeded one, as a table and as JSON", async () => {
    const producer = createClient(ProducerService, createTransport({ baseUrl: gateway.grpcUrl }));
    const { jobId } = await producer.enqueue({ job: { queue: "cli-attempts", maxAttempts: 3 } });
    const never = await taskq("job", "get", jobId);
    expect(never.stdout).toMatch(/^attempts: none yet \(never claimed\)$/m);

    const claim = async (workerId: string) => {
      const [j] = await gateway.store.jobsClaim({
        queues: ["cli-attempts"],
        limit: 1,
        leaseMs: 60_000,
        workerId,
      });
      if (!j) throw new Error("nothing claimed");
      return j;
    };
    for (const [worker, message, retryable] of [
      ["w1", "first failure", true],
      ["w2", "second failure", true],
    ] as const) {
      const j = await claim(worker);
      await gateway.store.jobsSettle([
        {
          jobId: j.id,
          attempt: j.attempt,
          kind: "failure",
          error: { type: "Boom", message, retryable },
          delayMs: 0,
          durationMs: 250,
        },
      ]);
    }
    const last = await claim("w3");
    await gateway.store.jobsSettle([
      { jobId: last.id, attempt: last.attempt, kind: "success", result: new Uint8Array() },
    ]);

    const shown = await taskq("job", "get", jobId);
    expect(shown.code).toBe(0);
    const table = shown.stdout.slice(shown.stdout.indexOf("attempts:")).trim().split("\n");
    expect(table[1]).toMatch(/^ATTEMPT\s+WORKER\s+CLAIMED\s+FINISHED\s+DURATION\s+OUTCOME\s+ERROR$/);
    expect(table[2]).toMatch(/^1\s+w1\s+\S+Z\s+\S+Z\s+250 ms\s+failed\s+Boom: first failure$/);
    expect(table[3]).toMatch(/^2\s+w2\s+\S+Z\s+\S+Z\s+250 ms\s+failed\s+Boom: second failure$/);
    expect(table[4]).toMatch(/^3\s+w3\s+\S+Z\s+\S+Z\s+\d+ ms\s+succeeded\s+-$/);
    expect(table).toHaveLength(5);

    const json = JSON.parse((await taskq("job", "get", jobId, "--json")).stdout);
    expect(
      json.attempts.map((a: { attempt: number; outcome: string; error?: { message: string } }) => [
        a.attempt,
        a.outcome,
        a.error?.message,
      ]),
    ).toEqual([
      [1, "failed", "first failure"],
      [2, "failed", "second failure"],
      [3, "succeeded", undefined],
    ]);
  });
});
