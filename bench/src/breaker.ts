// The `breaker` scenario: how many jobs a fleet burns on a dead downstream with and without the circuit
// breaker, how fast the breaker trips, how it probes, and how it recovers.
//
// How it measures: one throwaway database, `--gateways` (default 3) production-mode gateway children on
// it and the shared Redis (gateway-fleet.ts). Two variants run one after the other on fresh queues of
// the same run, everything else equal:
//   withBreaker     set_breaker_config(threshold 5, cooldown 5 s, half_open_successes 1)
//   withoutBreaker  no breaker
// Both queues get the same profile {max_running: 40, ramp_seconds: 5}: max_running never binds (20 slots)
// but gives the ramp something to scale after a close (the ramp scales max_running / the claim rate
// only), and puts both variants on the same gated claim path.
// 20 worker slots: 20 SDK Workers of concurrency 1 in this process, round-robin over the gateways. Jobs
// are enqueued with max_attempts 1 (one attempt = one job, a failure is final: a "burned" job); a feeder
// on gateway 0 keeps ≥ 4,000 jobs not yet started (enqueued − handler starts) so the backlog never
// runs dry. The handler is the simulated downstream: it records its start (this process's clock, the
// same host clock as Postgres' now()), sleeps 20 ms, and throws when it STARTED inside the outage.
// Timeline from the first handler start t0: healthy 3 s, outage `--seconds` (default 30) from
// downAt = t0 + 3 s to upAt, then recovery: 5 s without the breaker; with it, until the breaker closed
// (queue_flow.breaker_state polled every 100 ms) plus ramp_seconds + 2 s, and at least 5 s.
// Figures:
//   burned             handler starts in [downAt, upAt): attempts started while the downstream was down.
//   ratio              withBreaker.burned / withoutBreaker.burned (and the reduction factor, inverse).
//   tripAfterFirstFailureMs   breaker_opened job_event created_at − the first handler start ≥ downAt;
//                      workersSawOpenAfterFirstFailureMs: the first 20-ms sample of the Workers'
//                      snapshot().throttled with a BREAKER_OPEN verdict, against the same start.
//   failedBeforeTrip / burnedAfterTrip   starts in [downAt, opened] / (opened, upAt) (in-flight + probes).
//   probesDuringOutage breaker_reopened events (each a failed probe) whose probe job started < upAt;
//                      next to the cooldowns that end in the outage, ⌊(upAt − opened) / cooldown⌋.
//   closeAfterRecoveryMs  breaker_closed created_at − upAt (bounded by one cooldown + the probe).
//   rampClaimsPerSec   handler starts per 1-s bucket from the close, next to the healthy phase's
//                      claims/s (starts in [t0 + 0.5 s, downAt) over 2.5 s); firstClaimAfterCloseMs is
//                      the first start after the close other than the closing probe (workers told
//                      BREAKER_PROBING sleep its retry_after before they poll again).
//   verdicts           the Workers' throttled verdicts by reason, summed over the run.
// Every variant carries os.loadavg() at its start and end: two cores are shared with other work.
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import { type EnqueueSpec, type JobContext, silentLogger, Worker } from "@taskq/sdk";
import pg from "pg";
import { type GatewayFleet, startGatewayFleet } from "./gateway-fleet.js";
import { createThrowawayDatabase, type MachineInfo, machineInfo } from "./infra.js";
import { waitUntil } from "./peers/adapter.js";
import { type Scenario, textTable } from "./scenario.js";

type Load = [number, number, number];
const load = (): Load => os.loadavg().map((x) => Math.round(x * 100) / 100) as Load;
const r1 = (x: number): number => Math.round(x * 10) / 10;
const r4 = (x: number): number => Math.round(x * 10_000) / 10_000;

const WORKERS = 20;
const HANDLER_MS = 20;
const HEALTHY_MS = 3_000;
const RECOVERY_MS = 5_000;
const BREAKER = { failureThreshold: 5, cooldownSeconds: 5, halfOpenSuccesses: 1 } as const;
const PROFILE = { max_running: 40, ramp_seconds: 5 } as const;
const BACKLOG_LOW = 4_000;
const ENQUEUE_BATCH = 1_000;
const SAMPLE_MS = 20;

export interface VariantFigure {
  queue: string;
  breaker: typeof BREAKER | null;
  outageSeconds: number;
  /** Attempts (= jobs, max_attempts 1) started while the downstream was down. */
  burned: number;
  healthyClaimsPerSec: number;
  outageClaimsPerSec: number;
  firstFailureAfterDownMs: number | null;
  handlerStarts: number;
  enqueued: number;
  succeeded: number;
  failed: number;
  verdicts: Record<string, number>;
  loadavg: { start: Load; end: Load };
  [extra: string]: unknown;
}

export interface BreakerReport {
  scenario: "breaker";
  seconds: number;
  gateways: number;
  workers: string;
  handlerMs: number;
  profile: typeof PROFILE;
  machine: MachineInfo;
  withBreaker: VariantFigure | { error: string };
  withoutBreaker: VariantFigure | { error: string };
  /** withBreaker.burned / withoutBreaker.burned. */
  ratio: number | null;
  /** withoutBreaker.burned / withBreaker.burned. */
  reductionFactor: number | null;
  loadavg: { start: Load; end: Load };
}

interface Ctx {
  fleet: GatewayFleet;
  pool: pg.Pool;
  tag: string;
  seconds: number;
  /** Every worker's prefetch (`--prefetch`, default 0). */
  prefetch: number;
  log: (m: string) => void;
}

interface Start {
  t: number;
  id: string;
}

interface BreakerEvent {
  type: string;
  at: number;
  jobId: string;
  data: Record<string, unknown>;
}

const count = (ts: readonly Start[], from: number, to: number) =>
  ts.filter((s) => s.t >= from && s.t < to).length;

async function runVariant(ctx: Ctx, withBreaker: boolean): Promise<VariantFigure> {
  const queue = `breaker-${withBreaker ? "on" : "off"}-${ctx.tag}`;
  const gw0 = ctx.fleet.members[0];
  if (!gw0) throw new Error("no gateway");
  await gw0.admin.ensureQueue({ queue, profile: { ...PROFILE } as JsonObject });
  if (withBreaker) await gw0.admin.setBreakerConfig({ queue, ...BREAKER });

  const spec: EnqueueSpec = { queue, maxAttempts: 1 };
  let enqueued = 0;
  const enqueueBatch = async (n: number) => {
    await gw0.client.enqueueBatch(Array.from({ length: n }, () => spec));
    enqueued += n;
  };
  for (let i = 0; i < BACKLOG_LOW + ENQUEUE_BATCH * 2; i += ENQUEUE_BATCH) await enqueueBatch(ENQUEUE_BATCH);
  await ctx.pool.query("analyze taskq.jobs");

  // The simulated downstream; the timeline is fixed by the first handler start.
  const starts: Start[] = [];
  let t0 = 0;
  let downAt = Number.POSITIVE_INFINITY;
  let upAt = Number.POSITIVE_INFINITY;
  const handler = async (job: JobContext) => {
    const at = Date.now();
    if (t0 === 0) {
      t0 = at;
      downAt = t0 + HEALTHY_MS;
      upAt = downAt + ctx.seconds * 1000;
    }
    starts.push({ t: at, id: job.id });
    await sleep(HANDLER_MS);
    if (at >= downAt && at < upAt) throw new Error("downstream unavailable");
  };

  const loadStart = load();
  const workers = Array.from({ length: WORKERS }, (_, i) => {
    const m = ctx.fleet.members[i % ctx.fleet.members.length];
    if (!m) throw new Error("no gateway");
    return new Worker({
      baseUrl: "unused (transport given)",
      transport: m.transport,
      queues: [queue],
      concurrency: 1,
      prefetch: ctx.prefetch,
      handler,
      // Thousands of failures on purpose: the default logger would print each one.
      logger: silentLogger,
    });
  });
  const verdictsNow = (): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const w of workers)
      for (const [k, v] of Object.entries(w.snapshot().throttled)) out[k] = (out[k] ?? 0) + v;
    return out;
  };

  let running = true;
  let feederError: unknown;
  const feeder = (async () => {
    while (running) {
      try {
        if (enqueued - starts.length < BACKLOG_LOW) await enqueueBatch(ENQUEUE_BATCH);
        else await sleep(50);
      } catch (err) {
        feederError = err;
        return;
      }
    }
  })();
  let sawOpenAt: number | null = null;
  const sampler = (async () => {
    while (running) {
      if (sawOpenAt === null && (verdictsNow().BREAKER_OPEN ?? 0) > 0) sawOpenAt = Date.now();
      await sleep(SAMPLE_MS);
    }
  })();

  let closedSeenAt: number | null = null;
  try {
    await Promise.all(workers.map((w) => w.start()));
    await waitUntil(async () => t0 !== 0, 10, 30_000);
    ctx.log(`breaker ${queue}: first claim; outage in ${HEALTHY_MS} ms for ${ctx.seconds} s`);
    await sleep(upAt - Date.now());
    ctx.log(`breaker ${queue}: downstream back up`);
    if (withBreaker) {
      try {
        await waitUntil(
          async () => {
            const r = await ctx.pool.query<{ s: string }>(
              "select breaker_state as s from taskq.queue_flow where queue = $1",
              [queue],
            );
            return r.rows[0]?.s === "closed";
          },
          100,
          BREAKER.cooldownSeconds * 1000 + 10_000,
        );
        closedSeenAt = Date.now();
        ctx.log(`breaker ${queue}: closed ${closedSeenAt - upAt} ms after recovery`);
      } catch {
        ctx.log(`breaker ${queue}: did not close within cooldown + 10 s`);
      }
      const until = Math.max(
        upAt + RECOVERY_MS,
        (closedSeenAt ?? Date.now()) + PROFILE.ramp_seconds * 1000 + 2000,
      );
      await sleep(until - Date.now());
    } else {
      await sleep(upAt + RECOVERY_MS - Date.now());
    }
  } finally {
    running = false;
    await Promise.all(workers.map((w) => w.stop({ graceMs: 2_000 })));
    await Promise.all([feeder, sampler]);
  }
  if (feederError) throw feederError;
  const verdicts = verdictsNow();
  const loadEnd = load();

  starts.sort((a, b) => a.t - b.t);
  const startOf = new Map(starts.map((s) => [s.id, s.t]));
  const snaps = workers.map((w) => w.snapshot());
  const firstFailure = starts.find((s) => s.t >= downAt && s.t < upAt)?.t ?? null;
  const healthyFrom = t0 + 500;
  const base: VariantFigure = {
    queue,
    breaker: withBreaker ? BREAKER : null,
    outageSeconds: ctx.seconds,
    burned: count(starts, downAt, upAt),
    healthyClaimsPerSec: r1(count(starts, healthyFrom, downAt) / ((downAt - healthyFrom) / 1000)),
    outageClaimsPerSec: r1(count(starts, downAt, upAt) / ctx.seconds),
    firstFailureAfterDownMs: firstFailure === null ? null : firstFailure - downAt,
    handlerStarts: starts.length,
    enqueued,
    succeeded: snaps.reduce((s, x) => s + x.succeeded, 0),
    failed: snaps.reduce((s, x) => s + x.failed, 0),
    verdicts,
    loadavg: { start: loadStart, end: loadEnd },
  };
  if (!withBreaker) {
    base.recoveryClaimsPerSec = r1(
      count(starts, upAt + 1000, upAt + RECOVERY_MS) / ((RECOVERY_MS - 1000) / 1000),
    );
    return base;
  }

  const ev = await ctx.pool.query<{
    type: string;
    at: string;
    job_id: string;
    data: Record<string, unknown>;
  }>(
    `select e.event_type as type, (extract(epoch from e.created_at) * 1000)::float8::text as at,
            e.job_id::text as job_id, e.data
     from taskq.job_events e join taskq.jobs j on j.id = e.job_id
     where j.queue = $1 and e.event_type like 'breaker_%' order by e.id`,
    [queue],
  );
  const events: BreakerEvent[] = ev.rows.map((e) => ({
    type: e.type,
    at: Number(e.at),
    jobId: e.job_id,
    data: e.data,
  }));
  const opened = events.find((e) => e.type === "breaker_opened");
  const reopened = events.filter((e) => e.type === "breaker_reopened");
  const closed = events.find((e) => e.type === "breaker_closed" && e.at >= (opened?.at ?? 0));
  const probesDuringOutage = reopened.filter((e) => (startOf.get(e.jobId) ?? e.at) < upAt);
  const closingProbeStart = closed ? startOf.get(closed.jobId) : undefined;
  const rampBuckets: number[] = [];
  if (closed) {
    for (let s = 0; s < PROFILE.ramp_seconds + 2; s++)
      rampBuckets.push(count(starts, closed.at + s * 1000, closed.at + (s + 1) * 1000));
  }
  const firstAfterClose = closed ? starts.find((s) => s.t > closed.at && s.id !== closed.jobId) : undefined;
  return {
    ...base,
    opened: opened
      ? { trigger: opened.data.trigger ?? null, streak: opened.data.failure_streak ?? null }
      : null,
    tripAfterFirstFailureMs: opened && firstFailure !== null ? Math.round(opened.at - firstFailure) : null,
    tripAfterDownMs: opened ? Math.round(opened.at - downAt) : null,
    workersSawOpenAfterFirstFailureMs:
      sawOpenAt !== null && firstFailure !== null ? sawOpenAt - firstFailure : null,
    failedBeforeTrip: opened ? count(starts, downAt, opened.at + 0.001) : null,
    burnedAfterTrip: opened ? count(starts, opened.at + 0.001, upAt) : null,
    probesDuringOutage: probesDuringOutage.length,
    // One probe per cooldown at most (each failed probe restarts the cooldown a little later).
    probesExpected: opened ? Math.floor((upAt - opened.at) / (BREAKER.cooldownSeconds * 1000)) : null,
    probeGapsMs: probesDuringOutage.map((e, i, a) =>
      Math.round(
        (startOf.get(e.jobId) ?? e.at) -
          (i === 0 ? (opened?.at ?? 0) : (startOf.get(a[i - 1]?.jobId ?? "") ?? 0)),
      ),
    ),
    reopened: reopened.length,
    closeAfterRecoveryMs: closed ? Math.round(closed.at - upAt) : null,
    closingProbeStartAfterRecoveryMs:
      closingProbeStart !== undefined ? Math.round(closingProbeStart - upAt) : null,
    firstClaimAfterCloseMs: firstAfterClose ? Math.round(firstAfterClose.t - (closed?.at ?? 0)) : null,
    rampSeconds: PROFILE.ramp_seconds,
    rampClaimsPerSec: rampBuckets,
    rampVsHealthy: rampBuckets.map((n) =>
      base.healthyClaimsPerSec > 0 ? r4(n / base.healthyClaimsPerSec) : null,
    ),
    finalState:
      (
        await ctx.pool.query<{ s: string }>(
          "select breaker_state as s from taskq.queue_flow where queue = $1",
          [queue],
        )
      ).rows[0]?.s ?? null,
  };
}

export const breakerScenario: Scenario<BreakerReport> = {
  name: "breaker",
  summary: "jobs burned on a dead downstream with and without the circuit breaker; trip, probes, close, ramp",
  async run(options) {
    const seconds = options.seconds ?? 30;
    const gateways = options.gateways ?? 3;
    const machine = machineInfo();
    const loadStart = load();
    const db = await createThrowawayDatabase(options.config.pgAdminUrl, "breaker");
    let fleet: GatewayFleet | undefined;
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      options.log(`breaker: starting ${gateways} gateways`);
      fleet = await startGatewayFleet({
        count: gateways,
        databaseUrl: db.url,
        redisUrl: options.config.redisUrl,
        log: options.log,
      });
      const ctx: Ctx = {
        fleet,
        pool,
        tag: `${process.pid}-${Date.now().toString(36)}`,
        seconds,
        prefetch: options.prefetch ?? 0,
        log: options.log,
      };
      const result: Pick<BreakerReport, "withBreaker" | "withoutBreaker"> = {
        withBreaker: { error: "not run" },
        withoutBreaker: { error: "not run" },
      };
      for (const [key, on] of [
        ["withoutBreaker", false],
        ["withBreaker", true],
      ] as const) {
        options.log(`breaker: ${key}, ${WORKERS} workers, ${seconds} s outage…`);
        try {
          result[key] = await runVariant(ctx, on);
          options.log(`breaker: ${key}: ${JSON.stringify(result[key])}`);
        } catch (err) {
          result[key] = { error: err instanceof Error ? err.message : String(err) };
          options.log(`breaker: ${key}: FAILED ${result[key].error}`);
        }
      }
      const w = result.withBreaker;
      const wo = result.withoutBreaker;
      const both = !("error" in w) && !("error" in wo);
      return {
        scenario: "breaker",
        seconds,
        gateways,
        workers: `${WORKERS} SDK Workers × concurrency 1, prefetch ${ctx.prefetch}, round-robin over ${gateways} gateways`,
        handlerMs: HANDLER_MS,
        profile: PROFILE,
        machine,
        ...result,
        ratio: both && wo.burned > 0 ? r4(w.burned / wo.burned) : null,
        reductionFactor: both && w.burned > 0 ? r1(wo.burned / w.burned) : null,
        loadavg: { start: loadStart, end: load() },
      };
    } finally {
      try {
        await pool.end();
        await fleet?.stop();
      } finally {
        await db.drop();
      }
    }
  },
  failed: (report) =>
    "error" in report.withBreaker ||
    "error" in report.withoutBreaker ||
    report.withBreaker.tripAfterFirstFailureMs === null ||
    report.withBreaker.closeAfterRecoveryMs === null,
  table(report) {
    const cell = (v: unknown) =>
      v === undefined || v === null ? "-" : typeof v === "object" ? JSON.stringify(v) : String(v);
    const rows = [["figure", "withBreaker", "withoutBreaker"]];
    const w = report.withBreaker as Record<string, unknown>;
    const wo = report.withoutBreaker as Record<string, unknown>;
    const keys = [
      "error",
      "burned",
      "healthyClaimsPerSec",
      "outageClaimsPerSec",
      "tripAfterFirstFailureMs",
      "workersSawOpenAfterFirstFailureMs",
      "failedBeforeTrip",
      "burnedAfterTrip",
      "probesDuringOutage",
      "probesExpected",
      "closeAfterRecoveryMs",
      "firstClaimAfterCloseMs",
      "rampClaimsPerSec",
      "recoveryClaimsPerSec",
      "verdicts",
    ];
    for (const k of keys) if (k in w || k in wo) rows.push([k, cell(w[k]), cell(wo[k])]);
    const m = report.machine;
    return (
      `breaker: ${report.workers}, ${report.handlerMs} ms handler, ${report.seconds} s outage, ` +
      `${m.cpus} × ${m.cpuModel}, load ${m.loadavg1} at start\n\n${textTable(rows)}\n\n` +
      `burned with / without: ${cell(report.ratio)} (×${cell(report.reductionFactor)} fewer)`
    );
  },
};
