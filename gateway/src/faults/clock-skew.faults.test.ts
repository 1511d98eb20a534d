// Three gateways, one with its clock 3 minutes ahead: the throttle and claim-rate limits still hold
// across the fleet (no 1-second window of claims, timed by Postgres, above the limit + 1), because
// their time comes from Redis TIME and Postgres now(), never from a gateway. Leases handed out by the
// skewed gateway behave too (the oracle judges the throttled queue).
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { busiestWindow, claimTimes } from "./claim-windows.js";
import { enqueueJobs, judge, scenarioQueue, waitForDrain } from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import { claimStartTimes } from "./stored-jobs.js";
import { FAULT_TOKEN } from "./token.js";
import { startWorkerChild, type WorkerChild } from "./worker-child.js";

const SKEW_MS = 3 * 60_000;
const PER_SECOND = 10;
// 20 s in CI; `TASKQ_FAULTS_SKEW_SECONDS=300` holds the skew for 5 minutes, a longer soak.
const MEASURE_MS = Number(process.env.TASKQ_FAULTS_SKEW_SECONDS ?? 20) * 1000;

describe.skipIf(!haveService("postgres") || !haveService("redis"))("a gateway with a skewed clock", () => {
  let env: FaultEnv;
  const gateways: GatewayChild[] = [];
  const workers: WorkerChild[] = [];
  beforeAll(async () => {
    env = await startFaultEnv();
    gateways.push(await startGatewayChild({ ...env.gateway }));
    gateways.push(
      ...(await Promise.all([
        startGatewayChild({ ...env.gateway }),
        startGatewayChild({ ...env.gateway, clockSkewMs: SKEW_MS }),
      ])),
    );
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(gateways.map((g) => g.child.stop()));
    await env?.close();
  });

  it(`keeps the fleet's throttle and claim rate at ${PER_SECOND}/s`, {
    timeout: MEASURE_MS + 120_000,
  }, async () => {
    const admin = createClient(
      AdminService,
      createTransport({ baseUrl: gateways[0]?.grpcUrl as string, token: FAULT_TOKEN }),
    );
    const throttled = scenarioQueue("skew-throttle");
    const rated = scenarioQueue("skew-rate");
    await admin.ensureQueue({ queue: throttled });
    await admin.setQueueThrottle({ queue: throttled, limit: PER_SECOND, periodMs: 1000 });
    await admin.ensureQueue({
      queue: rated,
      profile: { claim_rate_per_minute: PER_SECOND * 60, claim_burst: 1 },
    });
    // More jobs than MEASURE_MS can admit, so the limit, not the backlog, is what binds.
    const jobs = (PER_SECOND * MEASURE_MS) / 1000 + 50;
    const enqueued = {
      throttled: await enqueueJobs(gateways[0]?.grpcUrl as string, throttled, jobs),
      rated: await enqueueJobs(gateways[0]?.grpcUrl as string, rated, jobs),
    };
    // One worker process per gateway per queue, each with its own connection to that gateway only.
    const urls = gateways.map((g) => g.grpcUrl);
    const startOn = async (url: string, name: string, queue: string) => {
      const w = await startWorkerChild({
        name,
        urls: [url],
        queue,
        workers: 1,
        concurrency: 4,
        leaseMs: 2000,
        workMs: [10, 10],
      });
      workers.push(w);
      return w;
    };
    const started = Date.now();
    const fleets = {
      throttled: await Promise.all(urls.map((url, i) => startOn(url, `throttled-g${i}`, throttled))),
      rated: await Promise.all(urls.map((url, i) => startOn(url, `rated-g${i}`, rated))),
    };
    await new Promise((r) => setTimeout(r, MEASURE_MS - (Date.now() - started)));
    const ended = Date.now();
    const figures: Record<
      string,
      {
        claims: number;
        claimingMs: number;
        busiestSecond: number;
        workerSideBusiest: number;
        bySkewed: number;
      }
    > = {};
    for (const [name, queue] of [
      ["throttled", throttled],
      ["rated", rated],
    ] as const) {
      const times = (await claimStartTimes(env.databaseUrl, queue)).filter((t) => t >= started && t < ended);
      figures[name] = {
        claims: times.length,
        // From the queue's first claim: its worker processes start a few seconds into the window.
        claimingMs: times.length > 0 ? Math.round(ended - (times[0] as number)) : 0,
        busiestSecond: busiestWindow(times, 1000),
        // As the workers saw it: delivery jitter included, so it may read one or two higher.
        workerSideBusiest: busiestWindow(
          claimTimes(
            fleets[name].flatMap((w) => w.events),
            started,
            ended,
          ),
          1000,
        ),
        // Index 2 is the gateway whose clock is skewed.
        bySkewed: claimTimes(fleets[name][2]?.events ?? [], started, ended).length,
      };
    }
    const counts = await waitForDrain(env.databaseUrl, throttled, jobs, 60_000);
    const report = await judge(
      "clock skew (throttled queue)",
      env.databaseUrl,
      throttled,
      enqueued.throttled,
      fleets.throttled,
    );
    console.log(
      `[faults] clock skew +${SKEW_MS / 1000} s on 1 of 3 gateways, ${MEASURE_MS} ms at ${PER_SECOND}/s: ${JSON.stringify(figures)}; throttled queue drained ${JSON.stringify(counts)}`,
    );
    for (const name of ["throttled", "rated"] as const) {
      expect(figures[name]?.busiestSecond, name).toBeLessThanOrEqual(PER_SECOND + 1);
      // The fleet used its limit (it was the binding constraint), and the skewed gateway took part.
      const f = figures[name];
      expect(f?.claimingMs, name).toBeGreaterThan(MEASURE_MS / 2);
      expect(f?.claims, name).toBeGreaterThanOrEqual((PER_SECOND * (f?.claimingMs ?? 0) * 0.8) / 1000);
      expect(figures[name]?.bySkewed, name).toBeGreaterThan(0);
    }
    expect(report).toMatchObject({ ok: true, settledOnce: jobs });
  });
});
