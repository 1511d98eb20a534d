import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, ProducerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../testing/explain-harness.js";
import { idleWorker } from "../testing/idle-worker.js";
import { operatorRun } from "../testing/operator-run.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// `taskq job explain`, `taskq queue explain` and `taskq worker ls`, in process against a real
// (embedded) gateway: tables for people, --json for scripts, bad arguments named.

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway({ config: { workerRecordsFlushMs: 100 } });
});
afterAll(async () => {
  await gateway?.stop();
});

const taskq = (...argv: string[]) => operatorRun(argv, { TASKQ_URL: gateway.grpcUrl });

describe("taskq job explain / queue explain / worker ls", () => {
  it("explains a paused job: its reasons in a table, then the summary line; --json the message", async () => {
    const transport = createTransport({ baseUrl: gateway.grpcUrl });
    const admin = createClient(AdminService, transport);
    const producer = createClient(ProducerService, transport);
    await admin.ensureQueue({ queue: "cli-explain" });
    await admin.pauseQueue({ queue: "cli-explain" });
    const { jobId } = await producer.enqueue({ job: { queue: "cli-explain" } });

    const text = await taskq("job", "explain", jobId);
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(`job:             ${jobId}`);
    expect(lines).toContain("state:           queued");
    const header = lines.findIndex((l) => /^GATE\s+VERDICT\s+BLOCKING\s+NEXT\s+WHY$/.test(l));
    expect(header).toBeGreaterThan(0);
    expect(lines[header + 1]).toMatch(/^paused\s+PAUSED\s+yes\s+-\s+paused since .* by anonymous/);
    expect(lines.at(-1)).toMatch(/^no estimate: .*; first blocking: paused: /);

    const json = JSON.parse((await taskq("job", "explain", jobId, "--json")).stdout);
    expect(json.explanation).toMatchObject({ jobId, firstBlocking: "paused", queue: "cli-explain" });

    const queue = await taskq("queue", "explain", "cli-explain");
    expect(queue.code).toBe(0);
    expect(queue.stdout).toContain(`job:             ${jobId}`);
  });

  it("lists the connected workers with their queues, slots and last poll", async () => {
    await idleWorker({
      baseUrl: gateway.grpcUrl,
      workerId: "cli-worker",
      queues: ["cli-w1", "cli-w2"],
      concurrency: 4,
      prefetch: 2,
    });
    await until(async () => (await taskq("worker", "ls")).stdout.includes("cli-worker"), 3000);
    const lines = (await taskq("worker", "ls", "--queue", "cli-w2")).stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^WORKER\s+GATEWAY\s+QUEUES\s+HELD\s+SLOTS\s+ASKING\s+LAST_POLL\s+VERDICTS_1M$/);
    expect(lines[1]).toMatch(/^cli-worker\s+\S+\s+cli-w1,cli-w2\s+0\s+4\+2\s+6\s+\d+ s ago\s+-$/);
    expect(lines).toHaveLength(2);
    const json = JSON.parse((await taskq("worker", "ls", "--json")).stdout);
    expect(json.workers[0]).toMatchObject({ workerId: "cli-worker", concurrency: 4, prefetch: 2 });
  });

  it("names a bad argument and exits 1 for what the gateway refuses", async () => {
    const bad = await taskq("job", "explain", "abc");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/job_id/);
    const missing = await taskq("queue", "explain", "never-seen");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not found/);
    const noArg = await taskq("job", "explain");
    expect(noArg.code).toBe(2);
  });
});
