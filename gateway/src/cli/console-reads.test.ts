import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, ProducerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorRun } from "../testing/operator-run.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// The console's reads on the command line (`taskq job ls`, `job events`, `queue activity`,
// `queue breaker-events`), in process against a real gateway.

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(async () => {
  await gateway?.stop();
});

const taskq = (...argv: string[]) => operatorRun(argv, { TASKQ_URL: gateway.grpcUrl });

describe("taskq job ls / events", () => {
  it("lists failed jobs newest first with their error, pages, prints JSON, and refuses a bad state", async () => {
    const producer = createClient(ProducerService, createTransport({ baseUrl: gateway.grpcUrl }));
    for (let i = 0; i < 3; i++) await producer.enqueue({ job: { queue: "cli-jobs", maxAttempts: 1 } });
    const claimed = await gateway.store.jobsClaim({
      queues: ["cli-jobs"],
      limit: 3,
      leaseMs: 60_000,
      workerId: "w",
    });
    await gateway.store.jobsSettle(
      claimed.map((c) => ({
        jobId: c.id,
        attempt: c.attempt,
        kind: "failure" as const,
        error: { type: "Boom", message: "down", retryable: false },
        delayMs: null,
      })),
    );
    const ids = claimed.map((c) => c.id).sort((a, b) => Number(b) - Number(a));

    const text = await taskq("job", "ls", "cli-jobs", "--state", "failed", "--limit", "2");
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("3 failed in cli-jobs");
    expect(lines[1]).toMatch(/^ID\s+STATE\s+ATTEMPT\s+ENQUEUED\s+RUN_AT\s+FINISHED\s+OUTCOME\s+LAST_ERROR$/);
    expect(lines.slice(2, 4).map((l) => l.split(/\s+/)[0])).toEqual(ids.slice(0, 2));
    expect(lines[2]).toMatch(/ failed\s+1\/1 .* failed\s+Boom: down$/);
    expect(lines[4]).toBe(`next page: taskq job ls cli-jobs --state failed --before-id ${ids[1]}`);

    const json = await taskq(
      "job",
      "ls",
      "cli-jobs",
      "--state",
      "failed",
      "--before-id",
      ids[1] ?? "",
      "--json",
    );
    expect(JSON.parse(json.stdout)).toMatchObject({
      jobs: [{ id: ids[2], state: "JOB_STATE_FAILED" }],
      total: "3",
    });

    const events = await taskq("job", "events", ids[0] ?? "", "--json");
    expect(JSON.parse(events.stdout)).toEqual({ events: [] });

    const bad = await taskq("job", "ls", "cli-jobs", "--state", "lost");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^taskq job ls: --state must be one of scheduled, queued, running, succeeded, failed, cancelled, got "lost"/,
    );
    const help = await taskq("job", "ls", "--help");
    expect(help.stdout).toMatch(
      /^The queue's jobs, newest first, in every state or one.*\n\nUsage: taskq job ls <queue> \[flags\]/,
    );
  });

  it("lists every state when --state is not given", async () => {
    const producer = createClient(ProducerService, createTransport({ baseUrl: gateway.grpcUrl }));
    const failed = (await producer.enqueue({ job: { queue: "cli-all", maxAttempts: 1 } })).jobId;
    const [claimed] = await gateway.store.jobsClaim({
      queues: ["cli-all"],
      limit: 1,
      leaseMs: 60_000,
      workerId: "w",
    });
    await gateway.store.jobsSettle([
      {
        jobId: claimed?.id ?? "",
        attempt: 1,
        kind: "failure",
        error: { type: "Boom", message: "down", retryable: false },
        delayMs: null,
      },
    ]);
    const queued = (await producer.enqueue({ job: { queue: "cli-all" } })).jobId;
    const r = await taskq("job", "ls", "cli-all", "--limit", "1");
    expect(r).toMatchObject({ code: 0, stderr: "" });
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("2 jobs in cli-all");
    expect(lines[2]).toMatch(new RegExp(`^${queued}\\s+queued\\s`));
    expect(lines[3]).toBe(`next page: taskq job ls cli-all --before-id ${queued}`);
    expect((await taskq("job", "ls", "cli-all", "--before-id", queued)).stdout).toMatch(
      new RegExp(`^${failed}\\s+failed\\s+1/1 `, "m"),
    );
  });

  it("queue activity prints a row per minute; breaker-events lists manual trips with who", async () => {
    const activity = await taskq("queue", "activity", "cli-jobs", "--minutes", "2");
    expect(activity.code).toBe(0);
    const lines = activity.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^MINUTE\s+CLAIMED\s+SUCCEEDED\s+FAILED\s+CANCELLED\s+AVG_RUN_MS\s+MAX_RUN_MS\s+THROTTLED$/,
    );
    // The first test's three failures, in this minute or (across a minute boundary) the one before.
    const column = (name: string) => {
      const at = (lines[0] ?? "").split(/\s+/).indexOf(name);
      return lines.slice(1).reduce((sum, l) => sum + Number(l.split(/\s+/)[at]), 0);
    };
    expect([column("CLAIMED"), column("SUCCEEDED"), column("FAILED")]).toEqual([3, 0, 3]);

    const admin = createClient(AdminService, createTransport({ baseUrl: gateway.grpcUrl }));
    await admin.setBreakerConfig({ queue: "cli-jobs", failureThreshold: 3, cooldownSeconds: 30 });
    await admin.tripBreaker({ queue: "cli-jobs" });
    const events = await taskq("queue", "breaker-events", "cli-jobs", "--json");
    expect(JSON.parse(events.stdout)).toMatchObject({
      events: [{ eventType: "queue.trip_breaker", actor: "anonymous", jobId: "" }],
    });
    const refused = await taskq("queue", "activity", "cli-jobs", "--minutes", "61");
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/minutes must be from 1 to 60/) });
  });
});
