// How taskq is measured: `setup()` starts a production-mode gateway (`taskq gateway`: Postgres +
// Redis) as a child process on free ports and waits for /readyz; the bench process talks to it over
// gRPC (h2c) only, like any worker host would. `enqueue()` uses `Client.enqueueBatch` (1,000 a call).
// `drain()` starts one SDK `Worker` (the harness's concurrency, 50 by default) with a no-op handler and
// stops the clock when `snapshot().succeeded` reaches n — i.e. when the gateway has *accepted* the n-th
// settle (committed in Postgres), not when the n-th handler returned. `latency()` enqueues one job per
// stamp with `enqueueBatch` (a tick's due stamps, usually 5) and records enqueue→handler-start.
// Env knobs for profiling: TASKQ_BENCH_GATEWAY_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof")
// is added to the gateway's node flags; TASKQ_BENCH_GATEWAY_ENV ("K=V,K=V") to its environment;
// TASKQ_BENCH_GATEWAY_CLI runs another cli.ts (an experimental copy of the gateway) instead. Each
// drain logs its window in monotonic µs, to cut `--cpu-prof` profiles to it. The gateway is named as a
// child process, so the harness reports its CPU per job next to the worker's, Postgres' and Redis'.
// TASKQ_BENCH_WORKERS=N drains with N Workers of the harness's concurrency each on the one transport,
// as a fleet of busy workers whose polls reach the gateway together.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { freePort } from "@taskq/gateway/testing";
import { Client, createTransport, Worker } from "@taskq/sdk";
import pg from "pg";
import { type LatencyOptions, measureLatency } from "../latency.js";
import { BENCH_TOKEN, BENCH_TOKENS_ENV } from "../token.js";
import {
  Countdown,
  type DrainResult,
  type DrainWindow,
  drainResult,
  jobWork,
  type PeerAdapter,
  type PeerContext,
  type PeerFactory,
  waitUntil,
} from "./adapter.js";

const QUEUE = "bench";
const ENQUEUE_BATCH = 1_000;
/** Repository root: bench/src/peers → ../../.. */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** A number from the environment; unset or empty leaves the SDK's default. */
function numberEnv(name: string): number | undefined {
  const raw = process.env[name];
  return raw ? Number(raw) : undefined;
}

function extraEnv(raw: string | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of (raw ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at > 0) env[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return env;
}

/**
 * `prefetch`: the Worker's `prefetch` option, jobs it may hold beyond its free slots (0 holds none);
 * undefined passes no option at all, so the worker is the SDK's default, whatever that is.
 */
function taskq(ctx: PeerContext, name: string, prefetch: number | undefined): PeerAdapter {
  let child: ChildProcess | undefined;
  let exited: Promise<unknown> | undefined;
  let transport: ReturnType<typeof createTransport> | undefined;
  let client: Client | undefined;
  let probe: pg.Pool | undefined;
  const workers = new Set<Worker>();

  async function startGatewayChild(): Promise<{ grpcUrl: string }> {
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    const nodeArgs = (process.env.TASKQ_BENCH_GATEWAY_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
    const proc = spawn(
      process.execPath,
      [
        ...nodeArgs,
        "--conditions=taskq-source",
        "--import",
        "tsx",
        process.env.TASKQ_BENCH_GATEWAY_CLI ?? "gateway/src/cli.ts",
        "gateway",
      ],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          TASKQ_DATABASE_URL: ctx.databaseUrl,
          TASKQ_REDIS_URL: ctx.redisUrl,
          TASKQ_HOST: "127.0.0.1",
          TASKQ_GRPC_PORT: String(grpcPort),
          TASKQ_HTTP_PORT: String(httpPort),
          TASKQ_LOG_LEVEL: "warn",
          TASKQ_TOKENS: BENCH_TOKENS_ENV,
          // Finished jobs are not kept, as with the peers (graphile-worker deletes a completed job, BullMQ
          // runs with removeOnComplete): each settle deletes its job.
          TASKQ_RETENTION_SECONDS: "0",
          ...extraEnv(process.env.TASKQ_BENCH_GATEWAY_ENV),
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child = proc;
    exited = once(proc, "exit");
    const relay = (buf: Buffer) => {
      for (const line of buf.toString().split("\n")) if (line.trim()) ctx.log(`taskq gateway: ${line}`);
    };
    proc.stdout?.on("data", relay);
    proc.stderr?.on("data", relay);
    let exitCode: number | null | undefined;
    proc.once("exit", (code) => {
      exitCode = code;
    });
    const readyz = `http://127.0.0.1:${httpPort}/readyz`;
    await waitUntil(
      async () => {
        if (exitCode !== undefined) throw new Error(`gateway exited with code ${exitCode} before ready`);
        try {
          return (await fetch(readyz)).ok;
        } catch {
          return false;
        }
      },
      50,
      60_000,
    );
    return { grpcUrl: `http://127.0.0.1:${grpcPort}` };
  }

  function startWorker(concurrency: number, onJob: (payload: Uint8Array) => void): Worker {
    if (!transport) throw new Error("setup() first");
    const worker = new Worker({
      baseUrl: "unused (transport given)",
      transport,
      queues: [QUEUE],
      concurrency,
      ...(prefetch === undefined ? {} : { prefetch }),
      // TASKQ_BENCH_POLL_BATCH_WAIT_MS compares the Worker's pollBatchWaitMs (0: poll per freed slot).
      pollBatchWaitMs: numberEnv("TASKQ_BENCH_POLL_BATCH_WAIT_MS"),
      handler: async (job) => {
        onJob(job.payload);
        await jobWork(ctx);
      },
    });
    workers.add(worker);
    return worker;
  }

  async function stopWorker(worker: Worker | undefined): Promise<void> {
    if (!worker) return;
    await worker.stop({ graceMs: 5_000 });
    workers.delete(worker);
  }

  return {
    name,
    stores: ["postgres", "redis"],
    children: (): Record<string, number> => (child?.pid === undefined ? {} : { gateway: child.pid }),
    async setup() {
      const { grpcUrl } = await startGatewayChild();
      // One HTTP/2 session for the Client and the Worker, as the SDK suggests.
      transport = createTransport({ baseUrl: grpcUrl, token: BENCH_TOKEN });
      client = new Client({
        baseUrl: grpcUrl,
        transport,
        enqueueStreamIdleMs: numberEnv("TASKQ_BENCH_ENQUEUE_STREAM_IDLE_MS"),
      });
      probe = new pg.Pool({ connectionString: ctx.databaseUrl, max: 1 });
    },
    async enqueue(n: number) {
      if (!client || !probe) throw new Error("setup() first");
      for (let i = 0; i < n; i += ENQUEUE_BATCH) {
        const specs = Array.from({ length: Math.min(ENQUEUE_BATCH, n - i) }, () => ({ queue: QUEUE }));
        await client.enqueueBatch(specs);
      }
      // As for graphile-worker: autovacuum would have analyzed a table this busy in production.
      await probe.query("analyze taskq.jobs");
    },
    async drain(n: number, concurrency: number, window: DrainWindow): Promise<DrainResult> {
      const startedAt = await window.open();
      const markStart = process.hrtime.bigint() / 1000n;
      const countdown = new Countdown(n);
      const fleet = Array.from({ length: numberEnv("TASKQ_BENCH_WORKERS") ?? 1 }, () =>
        startWorker(concurrency, () => countdown.tick()),
      );
      const total = (key: "succeeded" | "settleRefused" | "failed" | "polls") =>
        fleet.reduce((sum, w) => sum + w.snapshot()[key], 0);
      try {
        await Promise.all(fleet.map((w) => w.start()));
        // As for the other peers: every handler has started, then the durable completion, which
        // `succeeded` counts (settles the gateway accepted). Polling it from the start would cost this
        // process a timer every millisecond of the drain.
        await countdown.done;
        await waitUntil(async () => total("succeeded") >= n);
        const markEnd = process.hrtime.bigint() / 1000n;
        const doneAt = await window.close();
        ctx.log(`${name}: drain window ${markStart}-${markEnd} (monotonic µs, for --cpu-prof)`);
        if (total("succeeded") !== n || total("settleRefused") > 0 || total("failed") > 0) {
          throw new Error(`taskq drain: ${JSON.stringify(fleet.map((w) => w.snapshot()))} for ${n} jobs`);
        }
        return { ...drainResult(n, startedAt, doneAt), polls: total("polls") };
      } finally {
        await Promise.all(fleet.map(stopWorker));
      }
    },
    async latency(options: LatencyOptions) {
      let worker: Worker | undefined;
      const decoder = new TextDecoder();
      return measureLatency(options, {
        startWorkers: async (concurrency, onStart) => {
          worker = startWorker(concurrency, (payload) => onStart(JSON.parse(decoder.decode(payload)).t));
          await worker.start();
        },
        enqueue: async (stamps) => {
          await client?.enqueueBatch(stamps.map((t) => ({ queue: QUEUE, payload: { t } })));
        },
        stopWorkers: () => stopWorker(worker),
      });
    },
    async teardown() {
      try {
        await Promise.all([...workers].map((w) => w.stop({ graceMs: 0 })));
        workers.clear();
        await probe?.end();
      } finally {
        probe = undefined;
        client = undefined;
        transport = undefined;
        if (child && child.exitCode === null && child.signalCode === null) {
          child.kill("SIGTERM");
          const killer = setTimeout(() => child?.kill("SIGKILL"), 10_000);
          await exited;
          clearTimeout(killer);
        }
        child = undefined;
        // The gateway keeps nothing in Redis for plain queues (no limits configured), so nothing is
        // left under ctx.keyPrefix; the database is the harness's to drop.
      }
    },
  };
}

/** taskq as a user gets it: a `Worker` given no `prefetch` option, so whatever the SDK defaults to. */
export const taskqPeer: PeerFactory = { name: "taskq", create: (ctx) => taskq(ctx, "taskq", undefined) };

/**
 * taskq with an explicit prefetch (`--prefetch N`, default 500: graphile-worker's documented local
 * queue); `--prefetch 0` is a worker that holds nothing ahead, beside the default in the same run.
 */
export const taskqPrefetchPeer: PeerFactory = {
  name: "taskq-prefetch",
  create: (ctx) => taskq(ctx, "taskq-prefetch", ctx.prefetch),
};
