import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { Client, createTransport, Worker } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// The dry run's promise, measured on a real gateway at a compressed timescale: record a queue's
// arrivals with no cap, dry-run a cap, then apply that cap to a second queue and replay the same
// arrivals and run times with the same worker. The predicted count of delayed jobs must be within 10 %
// of the count the real replay delays.

/** Three bursts of 16 one-second jobs, 6 s apart, and short jobs in the quiet between them. */
const ARRIVALS: { atMs: number; runMs: number }[] = [
  ...[0, 6000, 12_000].flatMap((at) => Array.from({ length: 16 }, () => ({ atMs: at, runMs: 1000 }))),
  ...[5000, 5500, 11_000, 11_500].map((atMs) => ({ atMs, runMs: 200 })),
].sort((a, b) => a.atMs - b.atMs);
const CAP = 4;
// Under a cap of 4 a burst runs in four rounds a second apart: rounds 2 to 4 (12 jobs a burst) start
// 1 s to 3 s later, the first round not at all; 500 ms is far from both.
const MIN_DELAY_MS = 500;

describe.skipIf(!haveService("postgres") || !haveService("redis"))("dry run accuracy", () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startTestGateway({ engine: "postgres" });
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  /** Runs the arrivals through `queue` with one worker of 16 slots; each job's wait from ready to start, by index. */
  async function play(queue: string): Promise<number[]> {
    const client = new Client({ baseUrl: gateway.grpcUrl });
    let done = 0;
    const worker = new Worker({
      baseUrl: gateway.grpcUrl,
      queues: [queue],
      concurrency: 16,
      handler: async (job) => {
        await sleep(job.json<{ runMs: number }>().runMs);
        done++;
      },
    });
    await worker.start();
    const t0 = Date.now();
    const ids: string[] = [];
    for (const [i, a] of ARRIVALS.entries()) {
      const wait = t0 + a.atMs - Date.now();
      if (wait > 0) await sleep(wait);
      ids[i] = (await client.enqueue({ queue, payload: { i, runMs: a.runMs } })).jobId;
    }
    for (const deadline = Date.now() + 60_000; done < ARRIVALS.length && Date.now() < deadline; )
      await sleep(50);
    await worker.stop();
    client.close();
    expect(done).toBe(ARRIVALS.length);
    const rows = await gateway.store.db.query<{ id: string; wait_ms: number }>(
      {
        name: "",
        text: `select id::text, extract(epoch from started_at - greatest(run_at, enqueued_at)) * 1000 as wait_ms
               from taskq.jobs where queue = $1`,
      },
      [queue],
    );
    const waits = new Map(rows.map((r) => [r.id, Number(r.wait_ms)]));
    return ids.map((id) => waits.get(id) ?? Number.NaN);
  }

  it("predicts the jobs a lower cap delays within 10 % of what applying it does", async () => {
    const admin = createClient(AdminService, createTransport({ baseUrl: gateway.grpcUrl }));
    const recorded = await play("recorded");
    const report = await admin.dryRunLimit({
      change: { case: "maxRunning", value: { queue: "recorded", maxRunning: CAP } },
      windowSeconds: 60,
      minDelayMs: MIN_DELAY_MS,
    });
    expect(report.jobs).toBe(ARRIVALS.length);

    await admin.ensureQueue({ queue: "replayed", profile: { max_running: CAP } });
    const replayed = await play("replayed");
    const actual = replayed.filter((w, i) => w - (recorded[i] as number) >= MIN_DELAY_MS).length;

    // The cap does delay jobs (36 by the arithmetic above), and the prediction is within 10 % of it.
    const figures = `predicted ${report.delayed} delayed, applying the cap delayed ${actual}`;
    expect(actual, figures).toBeGreaterThanOrEqual(30);
    expect(Math.abs(report.delayed - actual), figures).toBeLessThanOrEqual(Math.ceil(actual * 0.1));
  });
});
