// Redis (the limiter) cut off for 60 s under three gateways, all through the same Redis proxy. The documented mode: the gates that meter through Redis —
// throttle (THROTTLE), claim rate (RATE_LIMIT), flow keys (FLOW_KEY), and the ramp — fail CLOSED: they
// decline with their own reason and a 1 s retry_after, because a limit protects a downstream that
// must not see unmetered work. Pause, max_running and the breaker live in Postgres and are unaffected,
// and so is every queue without a Redis gate. Each failure is counted (taskq_limiter_errors_total),
// readyz says "redis unreachable", and within 5 s of recovery the limits admit again and hold — on each
// gateway, and fleet-wide (claims of all three gateways counted together).
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { busiestWindow, claimTimes } from "./claim-windows.js";
import { enqueueJobs, scenarioQueue } from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, isReady, startGatewayChild } from "./gateway-child.js";
import { scrape } from "./scrape.js";
import { claimStartTimes } from "./stored-jobs.js";
import { FAULT_TOKEN } from "./token.js";
import { startWorkerChild, type WorkerChild } from "./worker-child.js";

const OUTAGE_MS = 60_000;
/** Every gated queue admits 5 claims a second. */
const PER_SECOND = 5;
/** Claims that took their slot just before the cut may start this much later. */
const IN_FLIGHT_MS = 500;
const RECOVERY_BOUND_MS = 5000;
const MEASURE_AFTER_MS = 10_000;

describe.skipIf(!haveService("postgres") || !haveService("redis"))("Redis unreachable for 60 s", () => {
  let env: FaultEnv;
  const gateways: GatewayChild[] = [];
  const workers = new Map<string, WorkerChild>();
  beforeAll(async () => {
    env = await startFaultEnv();
    gateways.push(await startGatewayChild({ ...env.gateway }));
    gateways.push(
      ...(await Promise.all([startGatewayChild({ ...env.gateway }), startGatewayChild({ ...env.gateway })])),
    );
  });
  afterAll(async () => {
    await Promise.all([...workers.values()].map((w) => w.stop()));
    await Promise.all(gateways.map((g) => g.child.stop()));
    await env?.close();
  });

  it("fails the Redis gates closed, serves the rest, counts it, and holds the limits again after", {
    timeout: 180_000,
  }, async () => {
    const gateway = gateways[0] as GatewayChild;
    const alive = (g: GatewayChild) => g.child.proc.exitCode === null && g.child.proc.signalCode === null;
    const admin = createClient(
      AdminService,
      createTransport({ baseUrl: gateway.grpcUrl, token: FAULT_TOKEN }),
    );
    const q = {
      free: scenarioQueue("redis-free"),
      throttle: scenarioQueue("redis-throttle"),
      rate: scenarioQueue("redis-rate"),
      flow: scenarioQueue("redis-flow"),
    };
    const flowKey = `${q.flow}-key`;
    await admin.ensureQueue({ queue: q.throttle });
    await admin.setQueueThrottle({ queue: q.throttle, limit: PER_SECOND, periodMs: 1000 });
    await admin.ensureQueue({
      queue: q.rate,
      profile: { claim_rate_per_minute: PER_SECOND * 60, claim_burst: 1 },
    });
    await admin.setFlowLimit({ flowKey, ratePerMinute: PER_SECOND * 60, burst: 1 });
    // Enough that the free queue (three workers) is still busy when the outage ends.
    await enqueueJobs(gateway.grpcUrl, q.free, 2000);
    for (const queue of [q.throttle, q.rate]) await enqueueJobs(gateway.grpcUrl, queue, 600);
    await enqueueJobs(gateway.grpcUrl, q.flow, 600, { flowKey });
    await Promise.all(
      Object.entries(q).map(async ([name, queue]) => {
        const w = await startWorkerChild({
          name,
          // Three workers, one on each gateway.
          urls: gateways.map((g) => g.grpcUrl),
          queue,
          workers: 3,
          concurrency: name === "free" ? 1 : 4,
          leaseMs: 10_000,
          workMs: name === "free" ? [150, 150] : [20, 20],
        });
        workers.set(name, w);
      }),
    );
    const gated = ["throttle", "rate", "flow"] as const;
    const events = (name: string) => workers.get(name)?.events ?? [];
    await new Promise((r) => setTimeout(r, 5000));

    const errorsBefore = await Promise.all(
      gateways.map((g) => scrape(g.httpUrl, "taskq_limiter_errors_total")),
    );
    const startedAt = Date.now() - 5000;
    const cutAt = Date.now();
    env.redisProxy.cut();
    let readyDuringOutage = 0;
    let exited = false;
    while (Date.now() - cutAt < OUTAGE_MS) {
      for (const g of gateways) {
        if (Date.now() - cutAt > 2000 && (await isReady(g))) readyDuringOutage++;
        exited ||= !alive(g);
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
    // Per gateway: each one failed closed and counted it.
    const limiterErrors = await Promise.all(
      gateways.map(
        async (g, i) => (await scrape(g.httpUrl, "taskq_limiter_errors_total")) - (errorsBefore[i] ?? 0),
      ),
    );
    const verdicts = Object.fromEntries(
      await Promise.all(
        gated.map(async (name) => {
          const reason = { throttle: "THROTTLE", rate: "RATE_LIMIT", flow: "FLOW_KEY" }[name];
          const n = await Promise.all(
            gateways.map((g) =>
              scrape(g.httpUrl, "taskq_throttled_verdicts_total", `queue="${q[name]}",reason="${reason}"`),
            ),
          );
          return [name, n];
        }),
      ),
    );
    env.redisProxy.pass();
    const recoveredAt = Date.now();
    const readyAfter = gateways.map(() => Number.POSITIVE_INFINITY);
    while (Date.now() - recoveredAt < MEASURE_AFTER_MS) {
      for (const [i, g] of gateways.entries())
        if (readyAfter[i] === Number.POSITIVE_INFINITY && (await isReady(g)))
          readyAfter[i] = Date.now() - recoveredAt;
      await new Promise((r) => setTimeout(r, 100));
    }
    const readyAfterMs = Math.max(...readyAfter);
    const claimedOn = (name: string, from: number, to: number) =>
      gateways.map(
        (_, i) =>
          claimTimes(
            events(name).filter((e) => e.worker === `${name}.${i}`),
            from,
            to,
          ).length,
      );
    const endedAt = Date.now();
    // The limits are read from the claims' own start times in Postgres, as in the clock-skew test; the
    // workers' receive times add delivery jitter on a busy machine, so they are reported beside them.
    const startTimes = Object.fromEntries(
      await Promise.all(
        Object.entries(q).map(async ([name, queue]) => [name, await claimStartTimes(env.databaseUrl, queue)]),
      ),
    ) as Record<string, number[]>;
    const startedWithin = (name: string, from: number, to: number) =>
      (startTimes[name] ?? []).filter((t) => t >= from && t < to);

    const figures = Object.fromEntries(
      (["free", ...gated] as const).map((name) => {
        const during = claimTimes(events(name), cutAt + IN_FLIGHT_MS, recoveredAt);
        const after = claimTimes(events(name), recoveredAt, endedAt);
        return [
          name,
          {
            before: busiestWindow(startedWithin(name, startedAt, cutAt), 1000),
            workerSideBefore: busiestWindow(claimTimes(events(name), startedAt, cutAt), 1000),
            during: during.length,
            firstAfterMs: after.length ? (after[0] as number) - recoveredAt : Number.POSITIVE_INFINITY,
            busiestSecondAfter: busiestWindow(startedWithin(name, recoveredAt, endedAt), 1000),
            workerSideAfter: busiestWindow(after, 1000),
            duringByGateway: claimedOn(name, cutAt + IN_FLIGHT_MS, recoveredAt),
            lastTenSecondsOfOutage: claimTimes(events(name), recoveredAt - 10_000, recoveredAt).length,
            afterByGateway: claimedOn(name, recoveredAt, endedAt),
          },
        ];
      }),
    );
    console.log(
      `[faults] Redis outage ${OUTAGE_MS} ms, 3 gateways: a gateway exited ${exited}; ready during outage ${readyDuringOutage}x, readyz ${JSON.stringify(readyAfter)} ms after recovery; limiter errors counted per gateway ${JSON.stringify(limiterErrors)}; throttled verdicts ${JSON.stringify(verdicts)}; claims per queue (busiest second before, claims during, first claim after recovery ms, busiest second after) ${JSON.stringify(figures)}`,
    );
    expect(exited).toBe(false);
    expect(readyDuringOutage).toBe(0);
    expect(readyAfterMs).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
    for (const n of limiterErrors) expect(n).toBeGreaterThan(0);
    // The free queue kept going at its worker's pace (one 150 ms job at a time).
    expect(figures.free?.during).toBeGreaterThan(OUTAGE_MS / 1000);
    expect(figures.free?.lastTenSecondsOfOutage).toBeGreaterThan(10);
    for (const n of figures.free?.duringByGateway ?? []) expect(n, "free, each gateway").toBeGreaterThan(0);
    for (const name of gated) {
      // Limits held before: the control that makes "held after" mean something.
      expect(figures[name]?.before, name).toBeLessThanOrEqual(PER_SECOND + 1);
      expect(figures[name]?.before, name).toBeGreaterThanOrEqual(PER_SECOND - 1);
      // Fail closed: nothing admitted, each decline counted with the gate's own reason.
      expect(figures[name]?.during, name).toBe(0);
      for (const n of verdicts[name] ?? []) expect(n, name).toBeGreaterThan(0);
      expect(verdicts[name], name).toHaveLength(3);
      expect(figures[name]?.firstAfterMs, name).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
      expect(figures[name]?.busiestSecondAfter, name).toBeLessThanOrEqual(PER_SECOND + 1);
      for (const n of figures[name]?.afterByGateway ?? [])
        expect(n, `${name}, each gateway`).toBeGreaterThan(0);
    }
  });
});
