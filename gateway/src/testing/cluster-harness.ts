/**
 * Shared helpers for the cluster-wide flow-control tests (`*.cluster.test.ts`): three gateway instances
 * on one fresh Postgres database and the shared test Redis, an admin client, SDK workers spread over the
 * instances, and a direct Postgres connection to read claim times (`taskq.jobs.started_at`) and sample
 * running counts.
 *
 * Every test gateway shares one Redis and the limiter's key prefix, so limiter keys are told apart by
 * queue (and flow key) names only: {@link Cluster.name} prefixes each with a random id per cluster.
 *
 * The services come through the guard (services.ts): a test file asks `haveService("postgres")` and
 * `haveService("redis")` before it starts a cluster.
 *
 * TASKQ_TEST_TOPOLOGY runs the same scenarios on the infrastructure large fleets run (see
 * {@link topology}): "pgbouncer" puts every gateway's pool behind PgBouncer in transaction pooling mode
 * (LISTEN and migrations on the direct URL, unnamed statements), "redis-cluster" gives the limiters a
 * three-node Redis Cluster. Each uses TASKQ_TEST_PGBOUNCER_URL / TASKQ_TEST_REDIS_CLUSTER_URL when set
 * (CI starts them once), else starts its own for the cluster's lifetime.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient, type Client as RpcClient } from "@connectrpc/connect";
import { Client, createTransport, type Handler, type JobContext, Worker } from "@taskq/sdk";
import { AdminService, type ClaimResponse, WorkerService } from "@taskq/sdk/proto";
import pg from "pg";
import type { Config } from "../config.js";
import { configuredLimiter } from "../server/limiter.js";
import { PGBOUNCER, startPgBouncer } from "./pgbouncer.js";
import { type LimiterEvent, RecordingLimiter } from "./recording-limiter.js";
import { startRedisCluster } from "./redis-cluster.js";
import { freshPostgres, haveCommand } from "./services.js";
import { startTestGateway, type TestGateway } from "./test-gateway.js";

export interface Cluster {
  gateways: TestGateway[];
  /** AdminService of each instance (same index as `gateways`). */
  admins: RpcClient<typeof AdminService>[];
  /** WorkerService of each instance, for raw claims (no SDK in between). */
  rpcs: RpcClient<typeof WorkerService>[];
  /** A producer on the first instance. */
  client: Client;
  /** A direct connection to the cluster's database, for reading claims and sampling. */
  pg: pg.Client;
  /**
   * Every decision of the instances' Redis limiters, with its Redis TIME: the exact admit times, which
   * the jobs' started_at (Postgres now() of the claim statement, a moment later) only approximates.
   */
  limiterEvents: LimiterEvent[];
  /**
   * A fresh name on each call, unique to this cluster (queue and flow-key names share one Redis across
   * test files), so a retried test starts on an empty queue.
   */
  name(base: string): string;
  stop(): Promise<void>;
}

/** Which infrastructure the cluster's gateways run on (TASKQ_TEST_TOPOLOGY); default plain Postgres and Redis. */
export type Topology = "plain" | "pgbouncer" | "redis-cluster";

/** The topology TASKQ_TEST_TOPOLOGY names; an unknown one is an error, not a silent plain run. */
export function topology(): Topology {
  const t = process.env.TASKQ_TEST_TOPOLOGY || "plain";
  if (t !== "plain" && t !== "pgbouncer" && t !== "redis-cluster")
    throw new Error(
      `TASKQ_TEST_TOPOLOGY must be plain, pgbouncer or redis-cluster, got ${JSON.stringify(t)}`,
    );
  return t;
}

/**
 * The database and Redis the cluster's gateways use in the current topology: a fresh database (its
 * direct URL for reads), the gateways' settings, and what to stop afterwards.
 */
async function infrastructure(): Promise<{
  directUrl: string;
  config: Partial<Config>;
  stop: () => Promise<void>;
}> {
  const fresh = await freshPostgres();
  const stops: (() => Promise<void>)[] = [fresh.drop];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => {});
  };
  try {
    const t = topology();
    const config: Partial<Config> = { databaseUrl: fresh.url };
    if (t === "pgbouncer") {
      let viaBouncer = process.env.TASKQ_TEST_PGBOUNCER_URL;
      if (viaBouncer) {
        const u = new URL(fresh.url);
        const b = new URL(viaBouncer);
        u.host = b.host;
        viaBouncer = u.toString();
      } else {
        // The topology was asked for by name: a missing PgBouncer fails the run rather than skip it.
        if (!haveCommand(PGBOUNCER, "install pgbouncer (Debian)"))
          throw new Error(`TASKQ_TEST_TOPOLOGY=pgbouncer needs ${PGBOUNCER} or TASKQ_TEST_PGBOUNCER_URL`);
        const bouncer = await startPgBouncer();
        stops.push(bouncer.stop);
        viaBouncer = bouncer.url(fresh.url);
      }
      Object.assign(config, {
        databaseUrl: viaBouncer,
        databaseDirectUrl: fresh.url,
        dbPooler: "transaction",
        dbPreparedStatements: false,
      } satisfies Partial<Config>);
    }
    if (t === "redis-cluster") {
      let url = process.env.TASKQ_TEST_REDIS_CLUSTER_URL;
      if (!url) {
        if (!haveCommand("redis-server", "install redis-server (Debian)"))
          throw new Error(
            "TASKQ_TEST_TOPOLOGY=redis-cluster needs redis-server or TASKQ_TEST_REDIS_CLUSTER_URL",
          );
        const cluster = await startRedisCluster();
        stops.push(cluster.stop);
        url = cluster.url;
      }
      config.redisUrl = url;
    }
    return { directUrl: fresh.url, config, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Starts `size` (default 3) gateway instances sharing one fresh Postgres database and the test Redis
 * (or PgBouncer and a Redis Cluster: see {@link topology}).
 */
export async function startCluster(opts: { size?: number; config?: Partial<Config> } = {}): Promise<Cluster> {
  const size = opts.size ?? 3;
  const infra = await infrastructure();
  const config: Partial<Config> = { dbPoolSize: 8, ...infra.config, ...opts.config };
  // Each instance's own Redis limiter, as configured, recording into the one list.
  const limiterEvents: LimiterEvent[] = [];
  const limiter = (c: Config) => new RecordingLimiter(configuredLimiter(c), limiterEvents);
  const databaseUrl = config.databaseUrl ?? "";
  const gateways: TestGateway[] = [];
  try {
    for (let i = 0; i < size; i++) gateways.push(await startTestGateway({ databaseUrl, config, limiter }));
  } catch (err) {
    for (const g of gateways) await g.stop();
    await infra.stop();
    throw err;
  }
  const db = new pg.Client({ connectionString: infra.directUrl });
  await db.connect();
  const transports = gateways.map((g) => createTransport({ baseUrl: g.grpcUrl }));
  const id = randomBytes(4).toString("hex");
  let names = 0;
  return {
    gateways,
    admins: transports.map((t) => createClient(AdminService, t)),
    rpcs: transports.map((t) => createClient(WorkerService, t)),
    client: new Client({ baseUrl: gateways[0]?.grpcUrl ?? "", transport: transports[0] }),
    pg: db,
    limiterEvents,
    name: (base) => `t${id}-${base}-${++names}`,
    stop: async () => {
      await db.end().catch(() => {});
      for (const g of [...gateways].reverse()) await g.stop();
      await infra.stop();
    },
  };
}

/** Enqueues `n` jobs built by `spec(i)` (default: an empty job on `queue`), 1000 per batch. */
export async function enqueueMany(
  c: Cluster,
  queue: string,
  n: number,
  spec: (i: number) => { flowKey?: string } = () => ({}),
): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({
      queue,
      payload: { n: i + k },
      ...spec(i + k),
    }));
    await c.client.enqueueBatch(batch);
  }
}

export interface Fleet {
  workers: Worker[];
  /** Sum of the workers' throttled verdicts by reason. */
  throttled(): Record<string, number>;
  claimed(): number;
  stop(): Promise<void>;
}

/** Starts `count` SDK workers on `queues`, round-robin over the cluster's instances. */
export async function startFleet(
  c: Cluster,
  o: { count: number; queues: string[]; concurrency?: number; handler: Handler; maxWaitMs?: number },
): Promise<Fleet> {
  const workers = Array.from(
    { length: o.count },
    (_, i) =>
      new Worker({
        baseUrl: c.gateways[i % c.gateways.length]?.grpcUrl ?? "",
        queues: o.queues,
        concurrency: o.concurrency ?? 1,
        maxWaitMs: o.maxWaitMs ?? 1000,
        shutdownGraceMs: 5000,
        handler: o.handler,
      }),
  );
  await Promise.all(workers.map((w) => w.start()));
  return {
    workers,
    throttled: () => {
      const out: Record<string, number> = {};
      for (const w of workers)
        for (const [k, v] of Object.entries(w.snapshot().throttled)) out[k] = (out[k] ?? 0) + v;
      return out;
    },
    claimed: () => workers.reduce((s, w) => s + w.snapshot().claimed, 0),
    stop: async () => {
      await Promise.all(workers.map((w) => w.stop()));
    },
  };
}

// The body of a worker fleet run in a child process (see spawnFleet): SDK Workers, as a real deployment
// runs them, off the event loop the three gateways share.
const FLEET_SCRIPT = `
import { Worker } from "@taskq/sdk";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
const o = JSON.parse(process.env.TASKQ_FLEET);
const workers = Array.from({ length: o.count }, (_, i) => new Worker({
  baseUrl: o.urls[i % o.urls.length], queues: o.queues, concurrency: o.concurrency,
  maxWaitMs: o.maxWaitMs, shutdownGraceMs: 5000,
  handler: async () => { await sleep(o.handlerMs); },
}));
await Promise.all(workers.map((w) => w.start()));
console.log(JSON.stringify({ ready: true }));
for await (const _ of createInterface({ input: process.stdin })) break;
await Promise.all(workers.map((w) => w.stop()));
const throttled = {};
let claimed = 0;
for (const w of workers) {
  const s = w.snapshot();
  claimed += s.claimed;
  for (const [k, v] of Object.entries(s.throttled)) throttled[k] = (throttled[k] ?? 0) + v;
}
console.log(JSON.stringify({ claimed, throttled }));
process.exit(0);
`;

/** What a child-process fleet reports when stopped. */
export interface FleetReport {
  claimed: number;
  throttled: Record<string, number>;
}

/**
 * Starts `count` SDK workers (handler: sleep `handlerMs`) in a child process, round-robin over the
 * cluster's instances, so their client-side work does not delay the gateways' event loop (all three
 * instances share this process). Resolves when every worker is running; `stop()` drains them.
 */
export async function spawnFleet(
  c: Cluster,
  o: { count: number; queues: string[]; concurrency?: number; handlerMs: number; maxWaitMs?: number },
): Promise<{ stop(): Promise<FleetReport> }> {
  const env = {
    ...process.env,
    TASKQ_FLEET: JSON.stringify({
      urls: c.gateways.map((g) => g.grpcUrl),
      count: o.count,
      queues: o.queues,
      concurrency: o.concurrency ?? 1,
      handlerMs: o.handlerMs,
      maxWaitMs: o.maxWaitMs ?? 1000,
    }),
  };
  const child = spawn(
    process.execPath,
    ["--conditions=taskq-source", "--import", "tsx", "--input-type=module", "--eval", FLEET_SCRIPT],
    { env, stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const r = await lines.next();
    if (r.done) throw new Error("worker fleet process ended early");
    return JSON.parse(r.value) as Record<string, unknown>;
  };
  await next();
  return {
    stop: async () => {
      child.stdin.end("stop\n");
      const report = (await next()) as unknown as FleetReport;
      await new Promise((r) => (child.exitCode === null ? child.once("exit", r) : r(null)));
      return report;
    },
  };
}

/** A handler that takes `ms`. */
export function sleepHandler(ms: number): Handler {
  return async (_job: JobContext) => {
    await sleep(ms);
  };
}

/**
 * Claim times of a queue's jobs (Postgres `started_at`, epoch ms with µs precision), ascending.
 * Jobs put back untouched (flow-key over its limit) have no started_at and are not counted.
 */
export async function claimTimes(c: Cluster, queue: string, flowKey?: string): Promise<number[]> {
  const res = await c.pg.query<{ t: string }>(
    `select (extract(epoch from started_at) * 1000)::float8::text as t from taskq.jobs
     where queue = $1 and started_at is not null and ($2::text is null or flow_key = $2)
     order by started_at, id`,
    [queue, flowKey ?? null],
  );
  return res.rows.map((r) => Number(r.t));
}

/** Resolves once the queue has at least `n` claimed jobs (or throws after `timeoutMs`). */
export async function waitForClaims(c: Cluster, queue: string, n = 1, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const r = await c.pg.query<{ n: number }>(
      "select count(*)::int as n from taskq.jobs where queue = $1 and started_at is not null",
      [queue],
    );
    if ((r.rows[0]?.n ?? 0) >= n) return;
    await sleep(5);
  }
  throw new Error(`queue ${queue}: fewer than ${n} claims after ${timeoutMs} ms`);
}

/** Redis TIME (ms) of each admitting take of `op` on `key` (a take admitting n counts n times). */
export function admitTimes(c: Cluster, op: LimiterEvent["op"], key: string): number[] {
  const out: number[] = [];
  for (const e of c.limiterEvents)
    if (e.op === op && e.key === key) for (let i = 0; i < e.n; i++) out.push(e.nowMs);
  return out.sort((a, b) => a - b);
}

/** Admissions given back on `key` by refunds of `op`. */
export function refunded(c: Cluster, op: LimiterEvent["op"], key: string): number {
  return c.limiterEvents.filter((e) => e.op === op && e.key === key).reduce((s, e) => s + e.n, 0);
}

/** Consecutive gaps between sorted times. */
export function gaps(times: readonly number[]): number[] {
  return times.slice(1).map((t, i) => t - (times[i] as number));
}

/**
 * Worst excess of GCRA admissions over the bound "any window [t_i, t_j] holds at most
 * burst + floor((t_j - t_i) / intervalMs) claims", as the ms by which the tightest window was too
 * short: <= 0 means the bound holds exactly; a small positive value is clock skew between the admit
 * (Redis TIME) and the recorded claim time (Postgres now()).
 */
export function windowSlackMs(times: readonly number[], burst: number, intervalMs: number): number {
  let worst = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < times.length; i++) {
    for (let j = i + burst; j < times.length; j++) {
      // j - i + 1 claims in [t_i, t_j] need (j - i + 1 - burst) intervals.
      const need = (j - i + 1 - burst) * intervalMs;
      worst = Math.max(worst, need - ((times[j] as number) - (times[i] as number)));
    }
  }
  return worst;
}

/** One raw claim (ClaimOnce, max_wait 0) of up to `maxJobs` jobs from `queue` on instance `i`. */
export function claimOnce(
  c: Cluster,
  i: number,
  queue: string,
  maxJobs = 1,
  leaseMs = 60_000,
): Promise<ClaimResponse> {
  const rpc = c.rpcs[i % c.rpcs.length];
  if (!rpc) throw new Error(`no instance ${i}`);
  return rpc.claimOnce({
    queues: [queue],
    maxJobs,
    maxWait: { seconds: 0n, nanos: 0 },
    workerId: `raw-${i}`,
    leaseDuration: { seconds: BigInt(Math.floor(leaseMs / 1000)), nanos: 0 },
  });
}

/** Sleeps at least `ms` by the monotonic clock (a Node timer may fire up to 1 ms early). */
export async function sleepAtLeast(ms: number): Promise<void> {
  const end = performance.now() + ms;
  await sleep(ms);
  while (performance.now() < end) await sleep(Math.max(1, end - performance.now()));
}

/** Mean and extremes, rounded, for reports. */
export function stats(xs: readonly number[]): { n: number; min: number; max: number; mean: number } {
  const n = xs.length;
  const r = (x: number) => Math.round(x * 1000) / 1000;
  if (n === 0) return { n, min: Number.NaN, max: Number.NaN, mean: Number.NaN };
  return { n, min: r(Math.min(...xs)), max: r(Math.max(...xs)), mean: r(xs.reduce((s, x) => s + x, 0) / n) };
}

/**
 * Checks a throttle's decisions on `queue` against its own rule, from the recorded takes: a take is
 * refused only while the slot is held (less than `intervalMs` after the last admit) and then says
 * exactly how long is left; one taken once the slot is free is admitted. Times are Redis TIME floored
 * to whole ms, hence the 1 ms allowances. Returns the violations (empty when exact) and how late after
 * the slot freed each admitting take arrived (the pollers' lateness, which costs throughput).
 */
export function throttleAudit(
  c: Cluster,
  queue: string,
  intervalMs: number,
): { violations: string[]; latenessMs: number[]; refusedTakes: number } {
  const takes = c.limiterEvents
    .filter((e) => e.op === "throttleTake" && e.key === queue)
    .map((e, i) => ({ ...e, i }))
    // By time; within one ms, admits first (a take refused in the same ms as an admit saw it).
    .sort((a, b) => a.nowMs - b.nowMs || b.n - a.n || a.i - b.i);
  const violations: string[] = [];
  const latenessMs: number[] = [];
  let last: number | null = null;
  let prev: number | null = null;
  for (const t of takes) {
    if (t.n === 1) {
      if (last !== null) {
        if (t.nowMs - last < intervalMs)
          violations.push(`admitted ${t.nowMs - last} ms after the last admit`);
        latenessMs.push(t.nowMs - last - intervalMs);
      }
      prev = last;
      last = t.nowMs;
    } else {
      if (last === null) {
        violations.push(`refused at ${t.nowMs} with no slot held`);
        continue;
      }
      const due = last + intervalMs;
      // Refused while free would be a lost claim; retry_after must land on the slot (±1 ms floors).
      if (t.nowMs > due) violations.push(`refused ${t.nowMs - due} ms after the slot freed`);
      const landsOn = t.nowMs + t.retryAfterMs;
      const ok =
        Math.abs(landsOn - due) <= 1 ||
        (prev !== null && t.nowMs === last && Math.abs(landsOn - (prev + intervalMs)) <= 1);
      if (!ok) violations.push(`retry_after ${t.retryAfterMs} ms lands ${landsOn - due} ms off the slot`);
    }
  }
  return { violations, latenessMs, refusedTakes: takes.length - latenessMs.length - 1 };
}
