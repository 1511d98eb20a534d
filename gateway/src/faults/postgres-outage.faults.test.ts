// Postgres taken away from a running gateway twice: first every backend of the test database is
// terminated (pg_terminate_backend), then the proxy cuts Postgres off for 30 s. The gateway keeps
// running (healthz up, readyz down), workers see errors and back off instead of spinning, service
// resumes within 5 s of Postgres coming back, and no job is lost.
import { Code } from "@connectrpc/connect";
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
import type { SdkLogLine, WorkerChild } from "./worker-child.js";

const JOBS = 600;
const OUTAGE_MS = 30_000;
const RESUME_BOUND_MS = 5000;

async function healthz(gw: GatewayChild): Promise<number> {
  try {
    return (await fetch(`${gw.httpUrl}/healthz`, { signal: AbortSignal.timeout(1000) })).status;
  } catch {
    return 0;
  }
}

describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "Postgres connections killed and cut off",
  () => {
    let env: FaultEnv;
    let gateway: GatewayChild;
    let workers: WorkerChild[] = [];
    beforeAll(async () => {
      env = await startFaultEnv();
      gateway = await startGatewayChild({
        ...env.gateway,
      });
    });
    afterAll(async () => {
      await Promise.all(workers.map((w) => w.stop()));
      await gateway?.child.stop();
      await env?.close();
    });

    it(`keeps the gateway up and loses none of ${JOBS} jobs`, { timeout: 180_000 }, async () => {
      const queue = scenarioQueue("postgres-outage");
      const enqueued = await enqueueJobs(gateway.grpcUrl, queue, JOBS);
      workers = await startWorkerFleet(4, {
        urls: [gateway.grpcUrl],
        queue,
        workers: 5,
        concurrency: 2,
        leaseMs: 2000,
        workMs: [100, 300],
      });
      await untilCompleted(workers, 100);

      // 1. Every backend of the test database terminated: the pool reconnects on its own.
      const terminated = await env.terminateBackends();
      const afterTerminate = completedRuns(workers);
      await untilCompleted(workers, afterTerminate + 100);
      const continued = completedRuns(workers) - afterTerminate;

      // 2. Postgres unreachable for OUTAGE_MS.
      const failuresBefore = workers.flatMap((w) => w.sdkLogs).length;
      const acceptedBeforeCut = env.pgProxy.accepted;
      env.pgProxy.cut();
      await env.terminateBackends();
      const cutAt = Date.now();
      const seen = { healthz: new Set<number>(), readyDuringOutage: 0, exited: false };
      while (Date.now() - cutAt < OUTAGE_MS) {
        seen.healthz.add(await healthz(gateway));
        // The first second is the time it takes to notice.
        if (Date.now() - cutAt > 1000 && (await isReady(gateway))) seen.readyDuringOutage++;
        seen.exited ||= gateway.child.proc.exitCode !== null || gateway.child.proc.signalCode !== null;
        await new Promise((r) => setTimeout(r, 500));
      }
      const outageLogs = workers.flatMap((w) => w.sdkLogs).slice(failuresBefore);
      const claimFailures = outageLogs.filter((l) => /claim stream failed/.test(l.message));
      const perWorker = new Map<string, number>();
      for (const l of claimFailures) perWorker.set(l.worker, (perWorker.get(l.worker) ?? 0) + 1);
      const codeOf = (l: SdkLogLine) => {
        const code = (l.fields.err as { code?: unknown } | undefined)?.code;
        return typeof code === "number" ? (Code[code] ?? String(code)) : "none";
      };
      const claimCodes = new Set(claimFailures.map(codeOf));

      const attemptsDuringOutage = env.pgProxy.accepted - acceptedBeforeCut;
      env.pgProxy.pass();
      const recoveredAt = Date.now();
      const resumeDeadline = recoveredAt + 30_000;
      let resumedAfterMs = Number.POSITIVE_INFINITY;
      while (Date.now() < resumeDeadline) {
        const first = workers
          .flatMap((w) => w.events)
          .find((e) => e.kind === "claimed" && e.atMs >= recoveredAt);
        if (first) {
          resumedAfterMs = first.atMs - recoveredAt;
          break;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      let readyAfterMs = Number.POSITIVE_INFINITY;
      while (Date.now() < resumeDeadline) {
        if (await isReady(gateway)) {
          readyAfterMs = Date.now() - recoveredAt;
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }

      // The gateway's connections to Postgres are the proxy's: after recovery they stay within the pool
      // (TASKQ_DB_POOL_SIZE 5) plus the LISTEN connection, however many attempts the outage saw.
      let mostConnections = 0;
      for (const until = Date.now() + 3000; Date.now() < until; ) {
        mostConnections = Math.max(mostConnections, env.pgProxy.connections);
        await new Promise((r) => setTimeout(r, 20));
      }
      const counts = await waitForDrain(env.databaseUrl, queue, JOBS, 90_000);
      const report = await judge("Postgres outage", env.databaseUrl, queue, enqueued, workers);
      const most = Math.max(0, ...perWorker.values());
      console.log(
        `[faults] Postgres outage: ${terminated} backends terminated, ${continued} jobs completed after; cut ${OUTAGE_MS} ms: gateway exited ${seen.exited}, healthz ${[...seen.healthz].join("/")}, ready during outage ${seen.readyDuringOutage}x; ${claimFailures.length} claim stream failures over ${perWorker.size} workers (at most ${most} each; codes ${[...claimCodes].join(", ")}); first claim ${resumedAfterMs} ms and readyz ${readyAfterMs} ms after recovery; ${attemptsDuringOutage} gateway connection attempts during the outage, at most ${mostConnections} connections after; final states ${JSON.stringify(counts)}`,
      );
      expect(terminated).toBeGreaterThan(0);
      expect(continued).toBeGreaterThanOrEqual(100);
      expect(seen).toMatchObject({ exited: false, healthz: new Set([200]), readyDuringOutage: 0 });
      // Workers noticed, and backed off (capped at 1 s by the fixture) rather than spinning.
      expect(claimFailures.length).toBeGreaterThan(0);
      expect(claimCodes).toEqual(new Set(["Unavailable"]));
      expect(most).toBeLessThanOrEqual(OUTAGE_MS / 500);
      expect(resumedAfterMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
      expect(mostConnections).toBeLessThanOrEqual(5 + 1);
      expect(report).toMatchObject({ ok: true, enqueued: JOBS, settledOnce: JOBS });
    });
  },
);
