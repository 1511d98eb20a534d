import { createClient } from "@connectrpc/connect";
import { Client, createTransport, Worker } from "@taskq/sdk";
import { AdminService, JobState } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runOperator } from "./cli/main.js";
import { startTestGateway, type TestGateway } from "./testing/test-gateway.js";

/**
 * Every list of queues shows every known queue (taskq.known_queues): the CLI's queue ls, health and
 * counters, the AdminService reads the console lists from, REST, and the SQL reads. A queue is known
 * once enqueued to, configured, or given settings, and stays known when its jobs have all finished or
 * are gone.
 */
describe("every list of queues", () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({ config: { queues: { configured: {} } } });
  });
  afterAll(() => gw?.stop());

  /** The queue names each list gives, by list. */
  async function lists(): Promise<Record<string, string[]>> {
    const cli = async (...argv: string[]) => {
      let stdout = "";
      const code = await runOperator([...argv, "--json"], {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { write: () => {} },
        env: { TASKQ_URL: gw.grpcUrl },
      });
      expect(code).toBe(0);
      return JSON.parse(stdout) as { queues?: { name: string }[]; rows?: { queue: string }[] };
    };
    const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl }));
    const sql = async (text: string) =>
      (await gw.store.db.query<{ queue: string }>({ name: "", text })).map((r) => r.queue);
    const rest = (await (await fetch(`${gw.httpUrl}/api/v1/queues`)).json()) as {
      queues: { queue: string }[];
    };
    return {
      "queue ls": (await cli("queue", "ls")).queues?.map((q) => q.name) ?? [],
      "queue health": (await cli("queue", "health")).rows?.map((r) => r.queue) ?? [],
      "queue counters": (await cli("queue", "counters")).rows?.map((r) => r.queue) ?? [],
      ListQueues: (await admin.listQueues({})).queues.map((q) => q.name),
      // The console's queue list merges these three.
      QueueFlow: (await admin.queueFlow({})).queues.map((q) => q.name),
      QueueHealth: (await admin.queueHealth({})).rows.map((r) => r.queue),
      QueueCounters: (await admin.queueCounters({})).rows.map((r) => r.queue),
      "GET /api/v1/queues": rest.queues.map((q) => q.queue),
      "taskq.queue_health": await sql("select queue from taskq.queue_health(null)"),
      "taskq.queue_counters": await sql("select queue from taskq.queue_counters order by queue"),
      "taskq.queue_flow": await sql("select queue from taskq.queue_flow order by queue"),
    };
  }

  /** Every list names `queues` and nothing else, in name order. */
  async function expectEveryList(queues: string[]): Promise<void> {
    const got = await lists();
    expect(got).toEqual(Object.fromEntries(Object.keys(got).map((list) => [list, queues])));
  }

  it("shows a configured queue, and a fresh queue right after the README's enqueue", async () => {
    await expectEveryList(["configured"]);
    const res = await fetch(`${gw.httpUrl}/taskq.v1.ProducerService/Enqueue`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        job: { queue: "emails", payload: "eyJ0byI6ImFkYSJ9", contentType: "application/json" },
      }),
    });
    expect(res.status).toBe(200);
    await expectEveryList(["configured", "emails"]);
    // queue get and its REST twin answer for it too, with every gate off.
    const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl }));
    expect((await admin.getQueue({ queue: "emails" })).queue).toMatchObject({
      name: "emails",
      paused: false,
    });
    expect((await fetch(`${gw.httpUrl}/api/v1/queues/emails`)).status).toBe(200);
  });

  it("still shows a queue whose jobs all finished, and one whose jobs are gone", async () => {
    const client = new Client({ baseUrl: gw.grpcUrl });
    const { jobId } = await client.enqueue({ queue: "done", payload: { n: 1 } });
    const worker = new Worker({ baseUrl: gw.grpcUrl, queues: ["done"], handler: async () => ({}) });
    await worker.start();
    try {
      const deadline = Date.now() + 10_000;
      while ((await client.getJob(jobId)).state !== JobState.SUCCEEDED && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
    } finally {
      await worker.stop();
    }
    expect((await client.getJob(jobId)).state).toBe(JobState.SUCCEEDED);
    await expectEveryList(["configured", "done", "emails"]);
    // As the retention window does to finished jobs.
    await gw.store.db.query({ name: "", text: "delete from taskq.jobs where queue = 'done'" });
    await expectEveryList(["configured", "done", "emails"]);
  });
});
