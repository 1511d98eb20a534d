// Postgres stalled (a black hole: connections stay open, nothing answers, as behind a dead VIP or a
// partition without RST) under SDK workers, with dbQueryTimeoutMs 2 s. No call may hang: polls,
// settles and enqueues are answered (UNAVAILABLE, or success) within the timeout plus slack, readyz
// answers 503 within a bound, the gateway stays up, claims resume within 5 s of the stall ending,
// Postgres connections return to pool + 1, and the oracle finds nothing lost or duplicated.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { Client, createTransport } from "@taskq/sdk";
import { WorkerService } from "@taskq/sdk/proto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import {
  completedRuns,
  enqueueJobs,
  judge,
  scenarioQueue,
  startWorkerFleet,
  untilCompleted,
  waitForDrain,
} from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, isReady, startGatewayChild } from "./gateway-child.js";
import { FAULT_TOKEN } from "./token.js";
import type { SdkLogLine, WorkerChild } from "./worker-child.js";

const JOBS = 600;
const POOL = 5;
const QUERY_TIMEOUT_MS = 2000;
const STALL_MS = 15_000;
/**
 * Each call is answered within this during the stall: a wait for a pooled connection (at most the
 * timeout), then the query's own timeout (+0.5 s), plus slack for a shared machine.
 */
const ANSWER_BOUND_MS = 2 * QUERY_TIMEOUT_MS + 2000;
/** readyz bounds its Postgres probe to 2 s. */
const READYZ_BOUND_MS = 3000;
const RESUME_BOUND_MS = 5000;
/** A call not answered by then is hung (the stall outlasts it). */
const HUNG_MS = STALL_MS + 5000;

interface Probe {
  ms: number;
  outcome: string;
}

async function probe(call: () => Promise<unknown>): Promise<Probe> {
  const started = Date.now();
  try {
    await call();
    return { ms: Date.now() - started, outcome: "ok" };
  } catch (err) {
    const e = ConnectError.from(err);
    return { ms: Date.now() - started, outcome: Code[e.code] ?? String(e.code) };
  }
}

/** Backends of the scenario's database opened by gateways (pool and LISTEN). */
async function gatewayBackends(databaseUrl: string): Promise<number> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const r = await c.query<{ n: string }>(
      "select count(*)::text as n from pg_stat_activity where datname = current_database() and application_name like 'taskq%'",
    );
    return Number(r.rows[0]?.n ?? 0);
  } finally {
    await c.end();
  }
}

describe.skipIf(!haveService("postgres") || !haveService("redis"))("Postgres stalled", () => {
  let env: FaultEnv;
  let gateway: GatewayChild;
  let workers: WorkerChild[] = [];
  beforeAll(async () => {
    env = await startFaultEnv();
    gateway = await startGatewayChild({
      ...env.gateway,
      env: { TASKQ_DB_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS), TASKQ_DB_POOL_SIZE: String(POOL) },
    });
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await gateway?.child.stop();
    await env?.close();
  });

  it(`answers every call within a bound, recovers, and loses none of ${JOBS} jobs`, {
    timeout: 120_000,
  }, async () => {
    const queue = scenarioQueue("postgres-stall");
    const probes = scenarioQueue("postgres-stall-probes");
    const enqueued = await enqueueJobs(gateway.grpcUrl, queue, JOBS);
    await enqueueJobs(gateway.grpcUrl, probes, 100);
    const transport = createTransport({ baseUrl: gateway.grpcUrl, token: FAULT_TOKEN });
    const worker = createClient(WorkerService, transport);
    const producer = new Client({ baseUrl: gateway.grpcUrl, token: FAULT_TOKEN });
    // Leases for the settle probes, held long enough to outlast the stall.
    const held = await worker.claimOnce({
      queues: [probes],
      maxJobs: 60,
      leaseDuration: { seconds: 120n },
      workerId: "stall-probe",
    });
    const leases = held.jobs.map((j) => ({ jobId: j.id, attempt: j.attempt }));
    workers = await startWorkerFleet(2, {
      urls: [gateway.grpcUrl],
      queue,
      workers: 3,
      concurrency: 2,
      leaseMs: 2000,
      workMs: [100, 300],
    });
    await untilCompleted(workers, 100);

    const signal = () => AbortSignal.timeout(HUNG_MS);
    const poll = () =>
      probe(() =>
        worker.claimOnce({ queues: [probes], maxJobs: 1, workerId: "stall-probe" }, { signal: signal() }),
      );
    const settle = (lease: { jobId: string; attempt: number } | undefined) =>
      probe(async () => {
        if (!lease) throw new Error("no lease left to settle");
        const requests = (async function* () {
          yield { settlements: [{ lease, outcome: { case: "success" as const, value: {} } }] };
        })();
        for await (const _ of worker.settle(requests, { signal: signal() })) return;
      });
    const enqueue = () => probe(() => producer.enqueue({ queue: probes, payload: { probe: true } }));
    const readyz = async (): Promise<Probe> => {
      const started = Date.now();
      try {
        const res = await fetch(`${gateway.httpUrl}/readyz`, { signal: signal() });
        return { ms: Date.now() - started, outcome: String(res.status) };
      } catch (err) {
        return { ms: Date.now() - started, outcome: (err as Error).name };
      }
    };

    const logsBefore = workers.flatMap((w) => w.sdkLogs).length;
    const completedBefore = completedRuns(workers);
    env.pgProxy.stall();
    const stalledAt = Date.now();
    const seen = {
      polls: [] as Probe[],
      settles: [] as Probe[],
      enqueues: [] as Probe[],
      readyz: [] as Probe[],
    };
    let exited = false;
    let next = 0;
    while (Date.now() - stalledAt < STALL_MS) {
      const round = Promise.all([poll(), settle(leases[next++]), enqueue()]);
      // The first second is the time it takes to notice.
      if (Date.now() - stalledAt > 1000) seen.readyz.push(await readyz());
      const [p, s, e] = await round;
      seen.polls.push(p);
      seen.settles.push(s);
      seen.enqueues.push(e);
      exited ||= gateway.child.proc.exitCode !== null || gateway.child.proc.signalCode !== null;
      await new Promise((r) => setTimeout(r, 300));
    }
    const completedDuringStall = completedRuns(workers) - completedBefore;
    const stallLogs = workers.flatMap((w) => w.sdkLogs).slice(logsBefore);
    const codeOf = (l: SdkLogLine) => {
      const code = (l.fields.err as { code?: unknown } | undefined)?.code;
      return typeof code === "number" ? (Code[code] ?? String(code)) : "none";
    };
    const workerCodes = new Set(stallLogs.filter((l) => /failed/.test(l.message)).map(codeOf));

    env.pgProxy.pass();
    const passedAt = Date.now();
    let resumedAfterMs = Number.POSITIVE_INFINITY;
    while (Date.now() - passedAt < 30_000) {
      const first = workers.flatMap((w) => w.events).find((e) => e.kind === "claimed" && e.atMs >= passedAt);
      if (first) {
        resumedAfterMs = first.atMs - passedAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    let readyAfterMs = Number.POSITIVE_INFINITY;
    while (Date.now() - passedAt < 30_000) {
      if (await isReady(gateway)) {
        readyAfterMs = Date.now() - passedAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    // Connections given up during the stall are gone once Postgres answers: at most the pool plus
    // LISTEN's, seen by Postgres itself (the proxy may still hold a closed one being torn down).
    await new Promise((r) => setTimeout(r, 1000));
    let mostBackends = 0;
    for (const until = Date.now() + 3000; Date.now() < until; ) {
      mostBackends = Math.max(mostBackends, await gatewayBackends(env.databaseUrl));
      await new Promise((r) => setTimeout(r, 200));
    }
    const counts = await waitForDrain(env.databaseUrl, queue, JOBS, 60_000);
    const report = await judge("Postgres stall", env.databaseUrl, queue, enqueued, workers);

    const all = [...seen.polls, ...seen.settles, ...seen.enqueues];
    const slowest = Math.max(...all.map((p) => p.ms));
    const slowestReadyz = Math.max(...seen.readyz.map((p) => p.ms));
    const outcomes = (ps: Probe[]) => {
      const by = new Map<string, number>();
      for (const p of ps) by.set(p.outcome, (by.get(p.outcome) ?? 0) + 1);
      return [...by].map(([k, v]) => `${k} ${v}`).join(", ");
    };
    console.log(
      `[faults] Postgres stalled ${STALL_MS} ms (dbQueryTimeoutMs ${QUERY_TIMEOUT_MS}): gateway exited ${exited}; ${seen.polls.length} polls (${outcomes(seen.polls)}), ${seen.settles.length} settles (${outcomes(seen.settles)}), ${seen.enqueues.length} enqueues (${outcomes(seen.enqueues)}), slowest answered in ${slowest} ms; readyz ${outcomes(seen.readyz)}, slowest ${slowestReadyz} ms; SDK workers: ${stallLogs.length} warnings (codes ${[...workerCodes].join(", ")}), ${completedDuringStall} handler runs completed during the stall; first claim ${resumedAfterMs} ms and readyz ${readyAfterMs} ms after the stall; at most ${mostBackends} gateway backends after (pool ${POOL}); final states ${JSON.stringify(counts)}`,
    );
    expect(exited).toBe(false);
    expect(slowest).toBeLessThanOrEqual(ANSWER_BOUND_MS);
    expect(all.every((p) => p.outcome === "ok" || p.outcome === "Unavailable")).toBe(true);
    // The stall was felt: most calls failed.
    expect(seen.polls.filter((p) => p.outcome === "Unavailable").length).toBeGreaterThan(0);
    expect(seen.readyz.length).toBeGreaterThan(0);
    expect(seen.readyz.every((p) => p.outcome === "503" && p.ms <= READYZ_BOUND_MS)).toBe(true);
    expect([...workerCodes].every((c) => c === "Unavailable")).toBe(true);
    expect(resumedAfterMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
    expect(mostBackends).toBeLessThanOrEqual(POOL + 1);
    expect(report).toMatchObject({ ok: true, enqueued: JOBS, settledOnce: JOBS });
  });
});
