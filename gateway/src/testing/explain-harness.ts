import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { createClient, type Client as RpcClient } from "@connectrpc/connect";
import { Client, createTransport, type EnqueueSpec, type Handler, silentLogger, Worker } from "@taskq/sdk";
import { AdminService, type Explanation, ProducerService } from "@taskq/sdk/proto";
import { onTestFinished } from "vitest";
import { startTestGateway, type TestGateway } from "./test-gateway.js";

/** How often the test gateway writes its worker records, ms. */
export const FLUSH_MS = 200;

/** What {@link explainSetup} gives a test. */
export interface ExplainSetup {
  gw: TestGateway;
  admin: RpcClient<typeof AdminService>;
  rpc: RpcClient<typeof ProducerService>;
  client: Client;
  /** A fresh queue name. */
  queue: string;
  explain(jobId: string): Promise<Explanation>;
  enqueue(spec?: Omit<EnqueueSpec, "queue">): Promise<string>;
  worker(handler?: Handler, concurrency?: number): Promise<Worker>;
  startedAt(jobId: string, withinMs?: number, attempt?: number): Promise<number>;
}

/**
 * A real gateway (Postgres and the Redis limiter) for explain's tests: a fresh queue name, clients,
 * SDK workers that stop with the test, and waits on what a job and the worker records become.
 */
export async function explainSetup(): Promise<ExplainSetup> {
  const gw = await startTestGateway({
    engine: "postgres",
    config: { workerRecordsFlushMs: FLUSH_MS, maintenanceIntervalMs: 50, maxRunningRetryMs: 50 },
  });
  onTestFinished(() => gw.stop());
  const transport = createTransport({ baseUrl: gw.grpcUrl });
  const admin = createClient(AdminService, transport);
  const rpc = createClient(ProducerService, transport);
  const client = new Client({ baseUrl: gw.grpcUrl, transport });
  // Queue and flow-key names share one Redis with other test files.
  const queue = `ex-${randomBytes(4).toString("hex")}`;

  const explain = async (jobId: string): Promise<Explanation> => {
    const e = (await admin.explainJob({ jobId })).explanation;
    if (!e) throw new Error("ExplainJob answered no explanation");
    return e;
  };
  const enqueue = async (spec: Omit<EnqueueSpec, "queue"> = {}) =>
    (await client.enqueue({ queue, ...spec })).jobId;
  /** Starts a worker on the queue and waits until the gateway's records list it. */
  const worker = async (handler: Handler = async () => {}, concurrency = 1) => {
    const w = new Worker({
      baseUrl: gw.grpcUrl,
      transport,
      queues: [queue],
      concurrency,
      maxWaitMs: 5000,
      shutdownGraceMs: 0,
      logger: silentLogger,
      handler,
    });
    onTestFinished(() => w.stop());
    await w.start();
    await until(async () => (await admin.listWorkers({ queue })).workers.length > 0, 10_000);
    return w;
  };
  /** When the job's latest attempt was claimed (ms), once it has been. */
  const startedAt = async (jobId: string, withinMs = 15_000, attempt = 1): Promise<number> => {
    let ms = 0;
    await until(async () => {
      const j = (await rpc.getJob({ jobId })).job;
      if (j?.startedAt && j.attempt >= attempt) ms = timestampMs(j.startedAt);
      return ms > 0;
    }, withinMs);
    return ms;
  };
  return { gw, admin, rpc, client, queue, explain, enqueue, worker, startedAt };
}

/** Polls `done` every 20 ms until it holds; throws after `withinMs`. */
export async function until(done: () => Promise<boolean>, withinMs: number): Promise<void> {
  const start = performance.now();
  while (!(await done())) {
    if (performance.now() - start > withinMs) throw new Error(`not within ${withinMs} ms`);
    await sleep(20);
  }
}

/** A Timestamp as ms; NaN when unset (so a comparison with it fails). */
export const ms = (t: Parameters<typeof timestampMs>[0] | undefined): number =>
  t ? timestampMs(t) : Number.NaN;

/** The reason of `gate` in an explanation. */
export function reasonOf(e: Explanation, gate: string) {
  const r = e.reasons.find((x) => x.gate === gate);
  if (!r) throw new Error(`no ${gate} reason in: ${e.reasons.map((x) => x.gate).join(", ")}`);
  return r;
}
