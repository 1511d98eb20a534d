// The `gates` scenario: how exactly each flow-control gate holds its configured limit, and what gates
// cost when they are configured but do not bind.
//
// How it measures: one throwaway database, `--gateways` (default 3) production-mode gateway children on
// it and the shared Redis (gateway-fleet.ts), and SDK Workers in this process spread round-robin over
// the gateways. Every part uses a fresh queue (and flow-key names) unique to this run, configured
// through AdminService before any job is enqueued. Claim times are read afterwards from Postgres
// (`taskq.jobs.started_at`, the `now()` of the claim statement, so they include the jitter between a
// gate's admit and the claim's statement). The measured window is `--seconds` (default 10) from the
// first claim of the part (for the ramp: from `ramp_started_at` of the resume). A sliding window is
// anchored at every claim: "violations" count the windows whose claims exceed the allowance.
//   throttle   {20, 1000 ms}: achieved claims/s vs 20, min/p50 gap, 1-s windows above limit + 1.
//   rate       1200/min burst 10: (claims − burst)/s vs 20; worst 1-s window vs rate + burst; the
//              largest GCRA excess max_{i≤j} (j − i + 1) − rate·(t_j − t_i), which must stay ≤ burst.
//   maxRunning 10, 50 ms jobs, 40 worker slots: running count sampled from Postgres every 10 ms by a
//              dedicated connection; max, mean/cap, samples above cap; throughput vs cap/0.05 s.
//              (A job counts as running in Postgres until its settle commits, so mean/cap includes the
//              settle and claim round trips, not only the 50 ms handlers.)
//   flowKey    a key at 600/min among 4 unlimited keys, its jobs at the head of the queue: limited
//              achieved/s vs 10; unlimited jobs/s (span of their claims) vs the same jobs on a queue
//              without the limited key. Jobs claimed over the key's tokens are put back by the gateway,
//              so only jobs that really ran (state ≠ queued, attempt > 0) are counted. Unlimited jobs/s
//              is all of them over their claims' span, or those claimed in the window over the window.
//              Repeated with workers' maxWaitMs 250 (diagnostic: a poll left parked is retried sooner).
//   ramp       3000/min, ramp_seconds 10: workers wait on the paused queue, then ResumeQueue; claims in
//              the first 2 s vs 2 s at full rate, claims in the window's last second vs full rate, next
//              to what a linear ramp (floor 1%) would give.
//   pause      workers on a busy queue (with `--prefetch`, holding jobs ahead of their slots), paused
//              halfway: claims after the pause was acknowledged (must be 0), handler starts after it (a
//              buffered job may take a slot freed before the worker's next poll hears of the pause) and
//              the jobs the workers gave back.
// Cost (`--jobs`, `--concurrency`, `--runs`): like the drain scenario, ONE Worker on gateway 0 drains N
// no-op jobs; the clock stops when the N-th settle is accepted. Variants on fresh queues: `none` (no
// settings), `allGates` (max_running 100000, claim rate 6,000,000/min — the maximum the API accepts —
// burst 100000, ramp_seconds 10 never started, priority aging 3600 s, default TTL 1 day, and a flow limit
// on a key no job carries), each of those alone for attribution, and `throttleOnly` {100000, 1000 ms}
// (whole-ms interval → at most 1 claim/ms, ONE job per poll) on min(N, 1500) jobs. CPU per job of this
// process, the gateways and their Postgres backends (from /proc) says where the time goes.
// Every figure carries os.loadavg() at its start and end: two cores are shared with other work.
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import { type EnqueueSpec, Worker } from "@taskq/sdk";
import pg from "pg";
import { type GatewayFleet, procCpuSeconds, startGatewayFleet } from "./gateway-fleet.js";
import { createThrowawayDatabase, type MachineInfo, machineInfo } from "./infra.js";
import { percentile } from "./latency.js";
import { waitUntil } from "./peers/adapter.js";
import { type Scenario, type ScenarioOptions, textTable } from "./scenario.js";

type Load = [number, number, number];
const load = (): Load => os.loadavg().map((x) => Math.round(x * 100) / 100) as Load;
const r2 = (x: number): number => Math.round(x * 100) / 100;
const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** What every accuracy figure reports, plus gate-specific fields. */
export interface GateFigure {
  configured: number;
  achieved: number;
  ratio: number;
  violations: number;
  loadavg: { start: Load; end: Load };
  throttledVerdicts: Record<string, number>;
  [extra: string]: unknown;
}

export interface CostFigure {
  jobs: number;
  jobsPerSec: number;
  runs: number[];
  cpuUsPerJob: { bench: number; gateway: number; postgres: number };
  loadavg: { start: Load; end: Load };
}

export interface GatesReport {
  scenario: "gates";
  seconds: number;
  gateways: number;
  /** Every worker's prefetch. */
  prefetch: number;
  machine: MachineInfo;
  accuracy: Record<string, GateFigure | { error: string }>;
  cost:
    | {
        jobs: number;
        concurrency: number;
        none: number;
        allGates: number;
        ratio: number;
        costPct: number;
        throttleOnly: CostFigure & { ratio: number };
        variants: Record<string, CostFigure>;
        note: string;
      }
    | { error: string };
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

const ENQUEUE_BATCH = 1_000;

async function enqueue(ctx: Ctx, specs: EnqueueSpec[]): Promise<void> {
  const client = ctx.fleet.members[0]?.client;
  if (!client) throw new Error("no gateway");
  for (let i = 0; i < specs.length; i += ENQUEUE_BATCH) {
    await client.enqueueBatch(specs.slice(i, i + ENQUEUE_BATCH));
  }
  await ctx.pool.query("analyze taskq.jobs");
}

/** `count` Workers, round-robin over the gateways; `handlerMs` of sleep per job (0: no-op). */
async function startWorkers(
  ctx: Ctx,
  opts: {
    queue: string;
    count: number;
    concurrency: number;
    handlerMs: number;
    maxWaitMs?: number;
    /** Told of each handler's start, ms since epoch. */
    onStart?: () => void;
  },
): Promise<Worker[]> {
  const workers: Worker[] = [];
  const members = ctx.fleet.members;
  for (let i = 0; i < opts.count; i++) {
    const m = members[i % members.length];
    if (!m) throw new Error("no gateway");
    workers.push(
      new Worker({
        baseUrl: "unused (transport given)",
        transport: m.transport,
        queues: [opts.queue],
        concurrency: opts.concurrency,
        prefetch: ctx.prefetch,
        maxWaitMs: opts.maxWaitMs,
        handler: async () => {
          opts.onStart?.();
          if (opts.handlerMs > 0) await sleep(opts.handlerMs);
        },
      }),
    );
  }
  await Promise.all(workers.map((w) => w.start()));
  return workers;
}

async function stopWorkers(workers: Worker[]): Promise<Record<string, number>> {
  await Promise.all(workers.map((w) => w.stop({ graceMs: 2_000 })));
  const verdicts: Record<string, number> = {};
  for (const w of workers) {
    for (const [reason, n] of Object.entries(w.snapshot().throttled))
      verdicts[reason] = (verdicts[reason] ?? 0) + n;
  }
  return verdicts;
}

/** Claim times (ms since epoch, µs precision) of the queue's jobs that really ran, ascending. */
async function claimTimes(ctx: Ctx, queue: string, flowKey?: string): Promise<number[]> {
  const r = await ctx.pool.query<{ t: string }>(
    `select (extract(epoch from started_at) * 1000)::float8 as t from taskq.jobs
     where queue = $1 and started_at is not null and state <> 'queued' and attempt > 0
       and ($2::text is null or flow_key = $2)
     order by started_at`,
    [queue, flowKey ?? null],
  );
  return r.rows.map((row) => Number(row.t));
}

async function waitForFirstClaim(ctx: Ctx, queue: string, timeoutMs = 30_000): Promise<void> {
  await waitUntil(
    async () =>
      (
        await ctx.pool.query("select 1 from taskq.jobs where queue = $1 and state <> 'queued' limit 1", [
          queue,
        ])
      ).rowCount === 1,
    10,
    timeoutMs,
  );
}

const gaps = (ts: number[]): number[] => ts.slice(1).map((t, i) => t - (ts[i] as number));
/** For each claim, the number of claims in [t, t + windowMs). */
function windowCounts(ts: number[], windowMs: number): number[] {
  const out: number[] = [];
  let j = 0;
  for (let i = 0; i < ts.length; i++) {
    if (j < i) j = i;
    while (j < ts.length && (ts[j] as number) < (ts[i] as number) + windowMs) j++;
    out.push(j - i);
  }
  return out;
}
const within = (ts: number[], from: number, to: number) => ts.filter((t) => t >= from && t < to);

/** Runs workers on a prepared queue for `seconds` after the first claim; returns claims and verdicts. */
async function runWindow(
  ctx: Ctx,
  queue: string,
  workerOpts: { count: number; concurrency: number; handlerMs: number; maxWaitMs?: number },
  during?: () => Promise<void>,
): Promise<{ verdicts: Record<string, number>; loadavg: { start: Load; end: Load } }> {
  const start = load();
  const workers = await startWorkers(ctx, { queue, ...workerOpts });
  let verdicts: Record<string, number> = {};
  try {
    await during?.();
    await waitForFirstClaim(ctx, queue);
    await sleep(ctx.seconds * 1000 + 300);
  } finally {
    verdicts = await stopWorkers(workers);
  }
  return { verdicts, loadavg: { start, end: load() } };
}

async function throttleGate(ctx: Ctx): Promise<GateFigure> {
  const queue = `throttle-${ctx.tag}`;
  const limit = 20;
  const periodMs = 1000;
  await ctx.fleet.members[0]?.admin.ensureQueue({ queue });
  await ctx.fleet.members[0]?.admin.setQueueThrottle({ queue, limit, periodMs });
  await enqueue(
    ctx,
    Array.from({ length: limit * ctx.seconds * 2 + 50 }, () => ({ queue })),
  );
  const n = ctx.fleet.members.length * 2;
  const { verdicts, loadavg } = await runWindow(ctx, queue, { count: n, concurrency: 2, handlerMs: 5 });
  const all = await claimTimes(ctx, queue);
  const t0 = all[0] ?? 0;
  const ts = within(all, t0, t0 + ctx.seconds * 1000);
  const g = gaps(ts).sort((a, b) => a - b);
  const intervalMs = periodMs / limit;
  const perSec = windowCounts(ts, 1000);
  const achieved = ts.length / ctx.seconds;
  return {
    configured: limit,
    achieved: r2(achieved),
    ratio: r3(achieved / limit),
    violations: perSec.filter((c) => c > limit + 1).length,
    unit: "claims/s",
    claimsInWindow: ts.length,
    worst1sWindow: Math.max(0, ...perSec),
    intervalMs,
    minGapMs: r2(g[0] ?? Number.NaN),
    p50GapMs: r2(percentile(g, 50)),
    p99GapMs: r2(percentile(g, 99)),
    gapsBelowInterval: g.filter((x) => x < intervalMs).length,
    gapsBelowIntervalMinus2ms: g.filter((x) => x < intervalMs - 2).length,
    workers: `${n} × concurrency 2, 5 ms jobs`,
    throttledVerdicts: verdicts,
    loadavg,
  };
}

/**
 * Pause while workers run (and, with prefetch, hold jobs ahead of their slots): no claim may follow the
 * pause's acknowledgement; a handler may start after it only within one poll round trip (a buffered job
 * taking a freed slot before the worker's next poll hears of the pause), and what is buffered is given back.
 */
async function pauseGate(ctx: Ctx): Promise<GateFigure> {
  const queue = `pause-${ctx.tag}`;
  const admin = ctx.fleet.members[0]?.admin;
  if (!admin) throw new Error("no gateway");
  await admin.ensureQueue({ queue });
  await enqueue(
    ctx,
    Array.from({ length: 20_000 }, () => ({ queue })),
  );
  const n = ctx.fleet.members.length * 2;
  const starts: number[] = [];
  const start = load();
  const workers = await startWorkers(ctx, {
    queue,
    count: n,
    concurrency: 4,
    handlerMs: 20,
    onStart: () => starts.push(Date.now()),
  });
  let verdicts: Record<string, number> = {};
  let ackedAt = 0;
  let ackedOnDb = 0;
  try {
    await waitForFirstClaim(ctx, queue);
    await sleep((ctx.seconds * 1000) / 2);
    await admin.pauseQueue({ queue });
    ackedAt = Date.now();
    const r = await ctx.pool.query<{ t: string }>(
      "select (extract(epoch from clock_timestamp()) * 1000)::float8 as t",
    );
    ackedOnDb = Number(r.rows[0]?.t);
    await sleep(2_000);
  } finally {
    verdicts = await stopWorkers(workers);
  }
  const claims = await claimTimes(ctx, queue);
  const released = workers.reduce((sum, w) => sum + w.snapshot().released, 0);
  const startsAfter = starts.filter((t) => t > ackedAt).map((t) => t - ackedAt);
  return {
    configured: 0,
    achieved: claims.filter((t) => t > ackedOnDb).length,
    ratio: 0,
    violations: claims.filter((t) => t > ackedOnDb).length,
    unit: "claims after the pause was acknowledged",
    claimsBeforePause: claims.filter((t) => t <= ackedOnDb).length,
    handlerStartsAfterAck: startsAfter.length,
    lastHandlerStartAfterAckMs: startsAfter.length > 0 ? Math.max(...startsAfter) : 0,
    releasedByWorkers: released,
    workers: `${n} × concurrency 4, prefetch ${ctx.prefetch}, 20 ms jobs`,
    throttledVerdicts: verdicts,
    loadavg: { start, end: load() },
  };
}

async function rateGate(ctx: Ctx): Promise<GateFigure> {
  const queue = `rate-${ctx.tag}`;
  const perMinute = 1200;
  const burst = 10;
  const perSec = perMinute / 60;
  await ctx.fleet.members[0]?.admin.ensureQueue({
    queue,
    profile: { claim_rate_per_minute: perMinute, claim_burst: burst } as JsonObject,
  });
  await enqueue(
    ctx,
    Array.from({ length: perSec * ctx.seconds * 2 + burst + 50 }, () => ({ queue })),
  );
  const n = ctx.fleet.members.length * 2;
  const { verdicts, loadavg } = await runWindow(ctx, queue, { count: n, concurrency: 4, handlerMs: 5 });
  const all = await claimTimes(ctx, queue);
  const t0 = all[0] ?? 0;
  const ts = within(all, t0, t0 + ctx.seconds * 1000);
  const counts = windowCounts(ts, 1000);
  // GCRA: any stretch [t_i, t_j] holds at most burst + rate·(t_j − t_i) claims.
  let maxExcess = 0;
  for (let i = 0; i < ts.length; i++) {
    for (let j = i; j < ts.length; j++) {
      const excess = j - i + 1 - (perSec * ((ts[j] as number) - (ts[i] as number))) / 1000;
      if (excess > maxExcess) maxExcess = excess;
    }
  }
  const achieved = Math.max(0, ts.length - burst) / ctx.seconds;
  return {
    configured: perSec,
    achieved: r2(achieved),
    ratio: r3(achieved / perSec),
    violations: counts.filter((c) => c > perSec + burst).length,
    unit: "claims/s after the burst",
    burst,
    claimsInWindow: ts.length,
    claimsInFirst100ms: within(ts, t0, t0 + 100).length,
    worst1sWindow: Math.max(0, ...counts),
    allowed1sWindow: perSec + burst,
    maxGcraExcess: r2(maxExcess),
    workers: `${n} × concurrency 4, 5 ms jobs`,
    throttledVerdicts: verdicts,
    loadavg,
  };
}

async function maxRunningGate(ctx: Ctx): Promise<GateFigure> {
  const queue = `maxrun-${ctx.tag}`;
  const cap = 10;
  const jobMs = 50;
  await ctx.fleet.members[0]?.admin.ensureQueue({ queue, profile: { max_running: cap } as JsonObject });
  await enqueue(
    ctx,
    Array.from({ length: Math.ceil((cap / (jobMs / 1000)) * ctx.seconds * 1.5) }, () => ({ queue })),
  );
  const sampler = new pg.Client({ connectionString: ctx.pool.options.connectionString });
  await sampler.connect();
  const samples: { at: number; running: number }[] = [];
  let sampling = true;
  const loop = (async () => {
    while (sampling) {
      const r = await sampler.query<{ n: number }>(
        "select count(*)::int as n from taskq.jobs where queue = $1 and state = 'running'",
        [queue],
      );
      samples.push({ at: performance.now(), running: r.rows[0]?.n ?? 0 });
      await sleep(10);
    }
  })();
  let result: Awaited<ReturnType<typeof runWindow>>;
  try {
    // 40 slots: 4 workers × 10, over the gateways.
    result = await runWindow(ctx, queue, { count: 4, concurrency: 10, handlerMs: jobMs });
  } finally {
    sampling = false;
    await loop.catch(() => {});
    await sampler.end();
  }
  const all = await claimTimes(ctx, queue);
  const t0 = all[0] ?? 0;
  const ts = within(all, t0, t0 + ctx.seconds * 1000);
  // Samples from the first one that saw a running job, for the window's length.
  const first = samples.findIndex((s) => s.running > 0);
  const s0 = samples[first]?.at ?? 0;
  const win = samples.slice(Math.max(0, first)).filter((s) => s.at < s0 + ctx.seconds * 1000);
  const mean = win.reduce((sum, s) => sum + s.running, 0) / Math.max(1, win.length);
  const maxObserved = Math.max(0, ...win.map((s) => s.running));
  const spanMs = (win.at(-1)?.at ?? s0) - s0;
  return {
    configured: cap,
    achieved: maxObserved,
    ratio: r3(maxObserved / cap),
    violations: win.filter((s) => s.running > cap).length,
    unit: "max running observed",
    meanRunning: r2(mean),
    utilisation: r3(mean / cap),
    samples: win.length,
    meanSampleIntervalMs: r2(spanMs / Math.max(1, win.length - 1)),
    throughputPerSec: r2(ts.length / ctx.seconds),
    idealThroughputPerSec: cap / (jobMs / 1000),
    workers: `4 × concurrency 10 (40 slots), ${jobMs} ms jobs`,
    throttledVerdicts: result.verdicts,
    loadavg: result.loadavg,
  };
}

async function flowKeyGate(ctx: Ctx, unlimitedJobs: number): Promise<GateFigure> {
  const perMinute = 600;
  const perSec = perMinute / 60;
  const unlimitedKeys = [0, 1, 2, 3].map((i) => `free${i}-${ctx.tag}`);
  const unlimited = (queue: string): EnqueueSpec[] =>
    Array.from({ length: unlimitedJobs }, (_, i) => ({ queue, flowKey: unlimitedKeys[i % 4] }));
  const workerOpts = { count: ctx.fleet.members.length * 2, concurrency: 10, handlerMs: 0 };
  const windowMs = ctx.seconds * 1000;
  /** Unlimited jobs/s: all of them over their claims' span, or those claimed in the window over it. */
  const freeRate = (ts: number[], from: number) =>
    ts.length >= unlimitedJobs
      ? ts.length / Math.max(1e-3, ((ts.at(-1) ?? 0) - (ts[0] ?? 0)) / 1000)
      : within(ts, from, from + windowMs).length / ctx.seconds;
  const freeTimes = async (queue: string, limitedKey: string) =>
    (
      await ctx.pool.query<{ t: string }>(
        `select (extract(epoch from started_at) * 1000)::float8 as t from taskq.jobs
         where queue = $1 and flow_key <> $2 and state <> 'queued' and attempt > 0 order by started_at`,
        [queue, limitedKey],
      )
    ).rows.map((r) => Number(r.t));

  // Baseline: the same unlimited jobs, no limited key in the queue.
  const base = `flow-base-${ctx.tag}`;
  await enqueue(ctx, unlimited(base));
  const baseRun = await runWindow(ctx, base, workerOpts);
  const baseTs = await claimTimes(ctx, base);
  const baseRate = freeRate(baseTs, baseTs[0] ?? 0);

  /** The limited key's jobs first (at the head of the queue), then the unlimited ones. */
  const mixed = async (label: string, maxWaitMs?: number) => {
    const queue = `flow-${label}-${ctx.tag}`;
    const limitedKey = `limited-${label}-${ctx.tag}`;
    await ctx.fleet.members[0]?.admin.setFlowLimit({
      flowKey: limitedKey,
      ratePerMinute: perMinute,
      burst: 1,
    });
    await enqueue(ctx, [
      ...Array.from({ length: perSec * ctx.seconds * 2 + 20 }, () => ({ queue, flowKey: limitedKey })),
      ...unlimited(queue),
    ]);
    const run = await runWindow(ctx, queue, { ...workerOpts, maxWaitMs });
    const all = await claimTimes(ctx, queue);
    const q0 = all[0] ?? 0;
    const lim = await claimTimes(ctx, queue, limitedKey);
    const l0 = lim[0] ?? 0;
    const limTs = within(lim, l0, l0 + windowMs);
    const counts = windowCounts(limTs, 1000);
    const freeTs = await freeTimes(queue, limitedKey);
    const rate = freeRate(freeTs, q0);
    const achieved = Math.max(0, limTs.length - 1) / ctx.seconds;
    const putBack = await ctx.pool.query<{ n: number }>(
      "select count(*)::int as n from taskq.jobs where queue = $1 and flow_key = $2 and state = 'queued'",
      [queue, limitedKey],
    );
    return {
      achieved,
      violations: counts.filter((c) => c > perSec + 1).length,
      limitedClaimsInWindow: limTs.length,
      worst1sWindow: Math.max(0, ...counts),
      limitedJobsStillQueued: putBack.rows[0]?.n ?? 0,
      unlimited: {
        jobs: unlimitedJobs,
        claimed: freeTs.length,
        withLimitedKeyPerSec: Math.round(rate),
        withoutLimitedKeyPerSec: Math.round(baseRate),
        ratio: r3(rate / baseRate),
      },
      workerMaxWaitMs: maxWaitMs ?? "SDK default (30000)",
      throttledVerdicts: run.verdicts,
      loadavg: run.loadavg,
    };
  };
  const main = await mixed("default");
  // Diagnostic: the same with polls that give up after 250 ms (a parked poll is retried sooner).
  const shortPoll = await mixed("shortpoll", 250);
  return {
    configured: perSec,
    achieved: r2(main.achieved),
    ratio: r3(main.achieved / perSec),
    violations: main.violations,
    unit: "limited key's claims/s (after burst 1)",
    limitedClaimsInWindow: main.limitedClaimsInWindow,
    worst1sWindow: main.worst1sWindow,
    limitedJobsStillQueued: main.limitedJobsStillQueued,
    unlimited: main.unlimited,
    workers: `${workerOpts.count} × concurrency 10, no-op jobs`,
    throttledVerdicts: main.throttledVerdicts,
    baselineThrottledVerdicts: baseRun.verdicts,
    withWorkerMaxWait250ms: {
      ...shortPoll,
      achieved: r2(shortPoll.achieved),
      ratio: r3(shortPoll.achieved / perSec),
    },
    loadavg: { start: baseRun.loadavg.start, end: main.loadavg.end },
  };
}

/** Mean of min(1, max(floor, t/R)) over [a, b] seconds (numeric). */
function linearRampFraction(a: number, b: number, rampSeconds: number): number {
  const steps = 1000;
  let sum = 0;
  for (let i = 0; i < steps; i++) {
    const t = a + ((i + 0.5) / steps) * (b - a);
    sum += Math.min(1, Math.max(0.01, t / rampSeconds));
  }
  return sum / steps;
}

async function rampGate(ctx: Ctx): Promise<GateFigure> {
  const queue = `ramp-${ctx.tag}`;
  const perMinute = 3000;
  const perSec = perMinute / 60;
  const rampSeconds = 10;
  const admin = ctx.fleet.members[0]?.admin;
  if (!admin) throw new Error("no gateway");
  await admin.ensureQueue({
    queue,
    profile: { claim_rate_per_minute: perMinute, claim_burst: 1, ramp_seconds: rampSeconds } as JsonObject,
  });
  await admin.pauseQueue({ queue });
  await enqueue(
    ctx,
    Array.from({ length: perSec * ctx.seconds * 2 }, () => ({ queue })),
  );
  let rampStartMs = 0;
  const run = await runWindow(
    ctx,
    queue,
    { count: ctx.fleet.members.length * 2, concurrency: 4, handlerMs: 5 },
    async () => {
      await sleep(300); // the workers are polling the paused queue
      const res = await admin.resumeQueue({ queue });
      const at = res.queue?.rampStartedAt;
      rampStartMs = at ? Number(at.seconds) * 1000 + at.nanos / 1e6 : Date.now();
    },
  );
  const all = await claimTimes(ctx, queue);
  const w = ctx.seconds;
  const first2 = within(all, rampStartMs, rampStartMs + 2000).length;
  const last1 = within(all, rampStartMs + (w - 1) * 1000, rampStartMs + w * 1000).length;
  const per1s = [];
  for (let s = 0; s < w; s++)
    per1s.push(within(all, rampStartMs + s * 1000, rampStartMs + (s + 1) * 1000).length);
  const expectedFirst2 = linearRampFraction(0, 2, rampSeconds);
  const expectedLast = linearRampFraction(w - 1, w, rampSeconds);
  // Allowance per second at the ramp's scale, + burst + 1 for rounding: anything above is a violation.
  const violations = per1s.filter(
    (c, s) => c > perSec * linearRampFraction(s, s + 1, rampSeconds) + 2,
  ).length;
  return {
    configured: perSec,
    achieved: last1,
    ratio: r3(last1 / perSec),
    violations,
    unit: "claims in the window's last second (vs full rate/s)",
    rampSeconds,
    first2s: {
      claims: first2,
      fullRate: perSec * 2,
      ratio: r3(first2 / (perSec * 2)),
      linearExpected: r3(expectedFirst2),
    },
    lastSecond: {
      claims: last1,
      fullRate: perSec,
      ratio: r3(last1 / perSec),
      linearExpected: r3(expectedLast),
    },
    claimsPerSecond: per1s,
    firstClaimAfterResumeMs: r2((all.find((t) => t >= rampStartMs - 50) ?? Number.NaN) - rampStartMs),
    claimsBeforeResume: all.filter((t) => t < rampStartMs - 50).length,
    workers: `${ctx.fleet.members.length * 2} × concurrency 4, 5 ms jobs`,
    throttledVerdicts: run.verdicts,
    loadavg: run.loadavg,
  };
}

/**
 * CPU seconds per Postgres backend of the database (ours excluded), by pid. Summed per pid as deltas so
 * a pooled backend that exits mid-run does not make the total go down (its last seconds are lost).
 */
async function postgresCpu(pool: pg.Pool): Promise<Map<number, number>> {
  const r = await pool.query<{ pid: number }>(
    "select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()",
  );
  return new Map(r.rows.map((row) => [row.pid, procCpuSeconds(row.pid)]));
}

function postgresCpuSince(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, s] of after) sum += Math.max(0, s - (before.get(pid) ?? 0));
  return sum;
}

/** One timed drain of `n` no-op jobs on `queue` through ONE worker on gateway 0. */
async function drainOnce(ctx: Ctx, queue: string, n: number, concurrency: number) {
  await enqueue(
    ctx,
    Array.from({ length: n }, () => ({ queue })),
  );
  const m = ctx.fleet.members[0];
  if (!m) throw new Error("no gateway");
  const start = load();
  const cpu0 = { bench: process.cpuUsage(), gw: ctx.fleet.cpuSeconds(), pg: await postgresCpu(ctx.pool) };
  const t0 = performance.now();
  const worker = new Worker({
    baseUrl: "unused (transport given)",
    transport: m.transport,
    queues: [queue],
    concurrency,
    prefetch: ctx.prefetch,
    handler: async () => {},
  });
  try {
    await worker.start();
    await waitUntil(async () => worker.snapshot().succeeded >= n);
    const ms = performance.now() - t0;
    const bench = process.cpuUsage(cpu0.bench);
    const us = (s: number) => Math.round((s * 1e6) / n);
    const cpu = {
      bench: us((bench.user + bench.system) / 1e6),
      gateway: us(ctx.fleet.cpuSeconds() - cpu0.gw),
      postgres: us(postgresCpuSince(cpu0.pg, await postgresCpu(ctx.pool))),
    };
    return { jobsPerSec: Math.round(n / (ms / 1000)), cpu, loadavg: { start, end: load() } };
  } finally {
    await worker.stop({ graceMs: 5_000 });
  }
}

type Setup = (ctx: Ctx, queue: string) => Promise<void>;

async function costOf(ctx: Ctx, options: ScenarioOptions): Promise<GatesReport["cost"]> {
  const admin = ctx.fleet.members[0]?.admin;
  if (!admin) throw new Error("no gateway");
  const unusedKey = `unused-${ctx.tag}`;
  await admin.setFlowLimit({ flowKey: unusedKey, ratePerMinute: 600, burst: 1 });
  const profile =
    (p: Record<string, number>): Setup =>
    async (_c, queue) => {
      await admin.ensureQueue({ queue, profile: p as JsonObject });
    };
  const allGates = {
    max_running: 100_000,
    claim_rate_per_minute: 6_000_000,
    claim_burst: 100_000,
    ramp_seconds: 10,
    priority_aging_seconds: 3600,
    default_ttl_seconds: 86_400,
  };
  const { priority_aging_seconds: _aging, ...allGatesButAging } = allGates;
  const variants: [string, Setup, number][] = [
    ["none", async () => {}, options.jobs],
    ["allGates", profile(allGates), options.jobs],
    ["maxRunningOnly", profile({ max_running: 100_000 }), options.jobs],
    ["claimRateOnly", profile({ claim_rate_per_minute: 6_000_000, claim_burst: 100_000 }), options.jobs],
    ["agingOnly", profile({ priority_aging_seconds: 3600 }), options.jobs],
    ["allGatesButAging", profile(allGatesButAging), options.jobs],
    [
      "throttleOnly",
      async (_c, queue) => {
        await admin.ensureQueue({ queue });
        await admin.setQueueThrottle({ queue, limit: 100_000, periodMs: 1000 });
      },
      Math.min(options.jobs, 1_500),
    ],
  ];
  if (options.warmup > 0) {
    ctx.log(`cost: warm-up drain of ${options.warmup}`);
    await drainOnce(ctx, `warm-${ctx.tag}`, options.warmup, options.concurrency);
  }
  const results: Record<
    string,
    { jobsPerSec: number; cpu: CostFigure["cpuUsPerJob"]; loadavg: CostFigure["loadavg"] }[]
  > = {};
  let q = 0;
  for (let run = 0; run < options.runs; run++) {
    // Alternate the order per run so a slow patch of the machine does not always hit the same variant.
    const order = run % 2 === 0 ? variants : [...variants].reverse();
    for (const [name, setup, n] of order) {
      const queue = `cost-${name}-${ctx.tag}-${q++}`;
      await setup(ctx, queue);
      const r = await drainOnce(ctx, queue, n, options.concurrency);
      ctx.log(
        `cost ${name}: ${r.jobsPerSec} jobs/s; CPU µs/job ${JSON.stringify(r.cpu)}; load ${r.loadavg.start[0]}`,
      );
      const list = results[name] ?? [];
      list.push(r);
      results[name] = list;
    }
  }
  const figure = (name: string, n: number): CostFigure => {
    const rs = [...(results[name] ?? [])].sort((a, b) => a.jobsPerSec - b.jobsPerSec);
    const med = rs[Math.floor((rs.length - 1) / 2)];
    if (!med) throw new Error(`no cost run for ${name}`);
    return {
      jobs: n,
      jobsPerSec: med.jobsPerSec,
      runs: (results[name] ?? []).map((r) => r.jobsPerSec),
      cpuUsPerJob: med.cpu,
      loadavg: med.loadavg,
    };
  };
  const figures = Object.fromEntries(variants.map(([name, , n]) => [name, figure(name, n)]));
  const none = figures.none as CostFigure;
  const all = figures.allGates as CostFigure;
  const thr = figures.throttleOnly as CostFigure;
  return {
    jobs: options.jobs,
    concurrency: options.concurrency,
    none: none.jobsPerSec,
    allGates: all.jobsPerSec,
    ratio: r3(all.jobsPerSec / none.jobsPerSec),
    costPct: Math.round((1 - all.jobsPerSec / none.jobsPerSec) * 1000) / 10,
    throttleOnly: { ...thr, ratio: r3(thr.jobsPerSec / none.jobsPerSec) },
    variants: figures,
    note:
      "allGates excludes the throttle (one job per poll by design, see throttleOnly); claim rate is " +
      "6,000,000/min, the API's maximum, as 10,000,000 is refused; aim: allGates ≥ 0.9 × none",
  };
}

export const gatesScenario: Scenario<GatesReport> = {
  name: "gates",
  summary: "accuracy of each flow-control gate over N gateways, and the cost of gates that do not bind",
  async run(options) {
    const seconds = options.seconds ?? 10;
    const gateways = options.gateways ?? 3;
    const machine = machineInfo();
    const db = await createThrowawayDatabase(options.config.pgAdminUrl, "gates");
    let fleet: GatewayFleet | undefined;
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      options.log(`gates: starting ${gateways} gateways`);
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
      const only = options.only;
      const parts: [string, () => Promise<GateFigure>][] = [
        ["throttle", () => throttleGate(ctx)],
        ["claimRate", () => rateGate(ctx)],
        ["maxRunning", () => maxRunningGate(ctx)],
        ["flowKey", () => flowKeyGate(ctx, Math.max(1000, Math.round(options.jobs / 2)))],
        ["ramp", () => rampGate(ctx)],
        ["pause", () => pauseGate(ctx)],
      ];
      const accuracy: GatesReport["accuracy"] = {};
      for (const [name, part] of parts) {
        if (only && !only.includes(name)) continue;
        options.log(`gates: ${name} for ${seconds} s…`);
        try {
          const fig = await part();
          accuracy[name] = fig;
          options.log(`gates: ${name}: ${JSON.stringify(fig)}`);
        } catch (err) {
          accuracy[name] = { error: err instanceof Error ? err.message : String(err) };
          options.log(`gates: ${name}: FAILED ${accuracy[name].error}`);
        }
      }
      let cost: GatesReport["cost"] = { error: "skipped (--only)" };
      if (!only || only.includes("cost")) {
        options.log("gates: cost of gates not binding…");
        try {
          cost = await costOf(ctx, options);
        } catch (err) {
          cost = { error: err instanceof Error ? err.message : String(err) };
        }
      }
      return { scenario: "gates", seconds, gateways, prefetch: ctx.prefetch, machine, accuracy, cost };
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
    Object.values(report.accuracy).some((f) => "error" in f) ||
    (report.cost !== null && "error" in report.cost && report.cost.error !== "skipped (--only)"),
  table(report) {
    const rows = [["gate", "configured", "achieved", "ratio", "violations", "load 1m", "note"]];
    for (const [name, f] of Object.entries(report.accuracy)) {
      if ("error" in f) {
        rows.push([name, "-", "-", "-", "-", "-", `FAILED: ${f.error}`]);
        continue;
      }
      rows.push([
        name,
        String(f.configured),
        String(f.achieved),
        String(f.ratio),
        String(f.violations),
        String(f.loadavg.start[0]),
        String(f.unit ?? ""),
      ]);
    }
    const c = report.cost;
    const foot =
      "error" in c
        ? `cost: ${c.error}`
        : `cost (${c.jobs} jobs, concurrency ${c.concurrency}): none ${c.none} jobs/s, allGates ${c.allGates} jobs/s ` +
          `(×${c.ratio}, cost ${c.costPct}%), throttleOnly ${c.throttleOnly.jobsPerSec} jobs/s (×${c.throttleOnly.ratio})`;
    const m = report.machine;
    return `gates: ${report.gateways} gateways, ${report.seconds} s windows, workers' prefetch ${report.prefetch}, ${m.cpus} × ${m.cpuModel}, load ${m.loadavg1} at start\n\n${textTable(rows)}\n\n${foot}`;
  },
};
