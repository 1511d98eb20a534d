// PgBouncer (transaction pooling, in front of the scenario's database) restarted under load, two
// gateways pooling through it with LISTEN and migrations on the direct URL. While it is down, claims
// fail UNAVAILABLE (workers back off); within 5 s of it coming back claims resume, and no job is lost.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalPgBouncer, PGBOUNCER, startPgBouncer } from "../testing/pgbouncer.js";
import { haveCommand, haveService } from "../testing/services.js";
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
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import type { SdkLogLine, WorkerChild } from "./worker-child.js";

const JOBS = 600;
const DOWN_MS = 3000;
const RESUME_BOUND_MS = 5000;

describe.skipIf(
  !haveService("postgres") || !haveService("redis") || !haveCommand(PGBOUNCER, "install pgbouncer"),
)("PgBouncer restarted under load", () => {
  let env: FaultEnv;
  let bouncer: LocalPgBouncer;
  const gateways: GatewayChild[] = [];
  let workers: WorkerChild[] = [];
  beforeAll(async () => {
    env = await startFaultEnv();
    bouncer = await startPgBouncer();
    const opts = {
      ...env.gateway,
      databaseUrl: bouncer.url(env.databaseUrl),
      env: {
        TASKQ_DATABASE_DIRECT_URL: env.databaseUrl,
        TASKQ_DB_POOLER: "transaction",
        TASKQ_DB_PREPARED_STATEMENTS: "false",
      },
    };
    gateways.push(await startGatewayChild(opts));
    gateways.push(await startGatewayChild(opts));
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(gateways.map((g) => g.child.stop()));
    await bouncer?.stop();
    await env?.close();
  });

  it(`fails claims UNAVAILABLE while it is down, resumes within 5 s, loses none of ${JOBS} jobs`, {
    timeout: 180_000,
  }, async () => {
    const queue = scenarioQueue("pgbouncer-restart");
    const enqueued = await enqueueJobs(gateways[0]?.grpcUrl ?? "", queue, JOBS);
    workers = await startWorkerFleet(3, {
      urls: gateways.map((g) => g.grpcUrl),
      queue,
      workers: 4,
      concurrency: 2,
      leaseMs: 2000,
      workMs: [100, 300],
    });
    await untilCompleted(workers, 100);
    const logsBefore = workers.flatMap((w) => w.sdkLogs).length;
    const completedBefore = completedRuns(workers);
    const restartedAt = Date.now();
    await bouncer.restart(DOWN_MS);
    const upAt = Date.now();
    let resumedAfterMs = Number.POSITIVE_INFINITY;
    while (Date.now() < upAt + 30_000) {
      const first = workers.flatMap((w) => w.events).find((e) => e.kind === "claimed" && e.atMs >= upAt);
      if (first) {
        resumedAfterMs = first.atMs - upAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const outageLogs = workers.flatMap((w) => w.sdkLogs).slice(logsBefore);
    const claimFailures = outageLogs.filter((l) => /claim stream failed/.test(l.message));
    const codeOf = (l: SdkLogLine) => {
      const code = (l.fields.err as { code?: unknown } | undefined)?.code;
      return typeof code === "number" ? (Code[code] ?? String(code)) : "none";
    };
    const codes = new Set(claimFailures.map(codeOf));
    const counts = await waitForDrain(env.databaseUrl, queue, JOBS, 90_000);
    const report = await judge("PgBouncer restart", env.databaseUrl, queue, enqueued, workers);
    console.log(
      `[faults] PgBouncer restarted (down ${upAt - restartedAt} ms) under ${completedBefore} completed jobs: ${claimFailures.length} claim stream failures (codes ${[...codes].join(", ")}); first claim ${resumedAfterMs} ms after it was back; final states ${JSON.stringify(counts)}`,
    );
    expect(claimFailures.length).toBeGreaterThan(0);
    expect(codes).toEqual(new Set(["Unavailable"]));
    expect(resumedAfterMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
    expect(report).toMatchObject({ ok: true, enqueued: JOBS, settledOnce: JOBS });
    for (const g of gateways) expect(g.child.proc.exitCode).toBeNull();
  });
});
