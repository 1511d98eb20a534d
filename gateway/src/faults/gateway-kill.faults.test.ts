// kill -9 of one of three gateways while workers claim and settle through it: claims it handed out
// but never delivered, and settles it took but never answered, are recovered (by lease expiry, or by
// the SDK re-sending the settle to the gateway restarted on the same ports, as a supervisor would).
// Nothing is lost; nothing claimed before the kill is left running after lease + leader lease + tick.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import {
  enqueueJobs,
  judge,
  scenarioQueue,
  startWorkerFleet,
  untilCompleted,
  waitForDrain,
} from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import { msUntilNoneStranded } from "./left-running.js";
import { redeliveryCauses } from "./redeliveries.js";
import { readStoredJobs } from "./stored-jobs.js";
import type { WorkerChild } from "./worker-child.js";

const JOBS = 1000;
const LEASE_MS = 2000;
const TICK_MS = 200;
/** The maintenance leader's lease is 5 ticks: the victim may have been the leader. */
const LEADER_LEASE_MS = 5 * TICK_MS;
const RESTART_AFTER_MS = 1000;
const SLACK_MS = 1500;

describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "kill -9 of a gateway mid-claim and mid-settle",
  () => {
    let env: FaultEnv;
    const gateways: GatewayChild[] = [];
    let workers: WorkerChild[] = [];
    beforeAll(async () => {
      env = await startFaultEnv();
      const start = (ports?: { grpc: number; http: number }) =>
        startGatewayChild({
          ...env.gateway,
          ports,
          env: { TASKQ_MAINTENANCE_INTERVAL_MS: String(TICK_MS) },
        });
      gateways.push(await start()); // alone: it runs the migrations
      gateways.push(...(await Promise.all([start(), start()])));
    });
    afterAll(async () => {
      await Promise.all(workers.map((w) => w.stop()));
      await Promise.all(gateways.map((g) => g.child.stop()));
      await env?.close();
    });

    it(`loses none of ${JOBS} jobs`, async () => {
      const queue = scenarioQueue("gateway-kill");
      const enqueued = await enqueueJobs(gateways[1]?.grpcUrl as string, queue, JOBS);
      workers = await startWorkerFleet(6, {
        urls: gateways.map((g) => g.grpcUrl),
        queue,
        workers: 6,
        concurrency: 4,
        leaseMs: LEASE_MS,
        workMs: [100, 500],
      });
      await untilCompleted(workers, JOBS / 4);
      const victim = gateways[0] as GatewayChild;
      const killedAt = Date.now();
      victim.child.signal("SIGKILL");
      await victim.child.exited;
      const bound = LEASE_MS + LEADER_LEASE_MS + TICK_MS + SLACK_MS;
      // Measured while the victim restarts: its workers can neither heartbeat nor settle meanwhile.
      const [clearedAfterMs, restartedAfterMs] = await Promise.all([
        msUntilNoneStranded(env.databaseUrl, queue, { startedBeforeMs: killedAt }, killedAt, bound),
        (async () => {
          await new Promise((r) => setTimeout(r, RESTART_AFTER_MS - (Date.now() - killedAt)));
          gateways[0] = await startGatewayChild({
            ...env.gateway,
            ports: { grpc: victim.grpcPort, http: victim.httpPort },
            env: { TASKQ_MAINTENANCE_INTERVAL_MS: String(TICK_MS) },
          });
          return Date.now() - killedAt;
        })(),
      ]);
      const counts = await waitForDrain(env.databaseUrl, queue, JOBS, 60_000);
      const report = await judge("gateway kill -9", env.databaseUrl, queue, enqueued, workers);
      const causes = redeliveryCauses(
        workers.flatMap((w) => w.events),
        await readStoredJobs(env.databaseUrl, queue),
        () => false,
      );
      const reconnects = workers
        .flatMap((w) => w.sdkLogs)
        .filter((l) => /stream failed/.test(l.message)).length;
      console.log(
        `[faults] gateway kill -9: restarted (ready) ${restartedAfterMs} ms after the kill; ${reconnects} worker streams failed and reconnected; nothing claimed before the kill left running ${clearedAfterMs} ms after it; final states ${JSON.stringify(counts)}; redeliveries by cause ${JSON.stringify(causes)}`,
      );
      expect(reconnects).toBeGreaterThan(0);
      expect(clearedAfterMs).toBeLessThanOrEqual(bound);
      expect(report).toMatchObject({
        ok: true,
        enqueued: JOBS,
        settledOnce: JOBS,
        lost: 0,
        duplicated: 0,
        unexpected: 0,
      });
    });
  },
);
