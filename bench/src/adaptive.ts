// The `adaptive` scenario: how close an adaptive max_running gets to what a downstream takes, how fast,
// and at what goodput next to the best fixed cap chosen in hindsight.
//
// How it measures: one throwaway database, `--gateways` (default 3) production-mode gateway children on
// it and the shared Redis (gateway-fleet.ts), 20 SDK Workers × concurrency 10 (200 slots, prefetch 0)
// in this process, round-robin over the gateways. The jobs call a mock downstream in this process (so one
// in-flight count for the whole fleet): up to CAPACITY calls in flight each takes BASE_MS; past it the
// calls queue, so each takes BASE_MS × in-flight / CAPACITY (its throughput stays CAPACITY / BASE_MS);
// past 1.5 × CAPACITY a call fails at once (a 503). Jobs have max_attempts 1, so a failure is final.
// A feeder keeps ≥ 4,000 jobs not yet started.
//
// Runs, one after the other, each on a fresh queue:
//   fixed-N     max_running N (20, 30, 40, 50, 60), `--seconds` (default 60) at capacity 40.
//   adaptive    set_adaptive_concurrency(min 2, max 200, target TARGET_MS): `--seconds` at capacity 40
//               from min, then 30 s (at most `--seconds`) at capacity 20: the capacity halves mid-run.
// `--only fixed-40,adaptive` runs just those.
// Figures:
//   goodputPerSec     successful jobs per second over the run (adaptive: its capacity-40 phase, from
//                     min; also from the settle to the end of that phase, steadyGoodputPerSec).
//   bestFixed         the fixed cap with the highest goodput; adaptiveVsBestFixed its ratio.
//   failureRate       failed / settled (adaptive: over both phases).
//   settleMs          from the first claim until the limit enters ±15% of the capacity and stays
//                     there to the end of the phase (null if it never does); firstInBandMs when it
//                     first enters; inBandShare the share of samples within the band after that.
//   followMs          the same after the capacity halves, against ±15% of the new capacity.
//   limit             the adaptive limit (max_running) and the calls in flight every 250 ms, and the
//                     limit's changes with their reasons.
// Every run carries os.loadavg() at its start and end: two cores are shared with other work.
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import { type EnqueueSpec, silentLogger, Worker } from "@taskq/sdk";
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
const SLOTS = 10;
const CAPACITY = 40;
const BASE_MS = 200;
/** 10% over the downstream's unloaded latency: what an operator would set after looking at it. */
const TARGET_MS = 220;
const ADAPTIVE = { min: 2, max: 200, targetLatencyMs: TARGET_MS } as const;
const FIXED_CAPS = [20, 30, 40, 50, 60] as const;
const FOLLOW_S = 30;
const BAND = 0.15;
const BACKLOG_LOW = 4_000;
const ENQUEUE_BATCH = 1_000;
const SAMPLE_MS = 250;
/** The adaptive run's figure when `--only` leaves it out (not a failure). */
const NOT_RUN = "not run (--only)";

/** The mock downstream: capacity calls at BASE_MS, queueing past it, failing past 1.5 × capacity. */
class Downstream {
  inFlight = 0;
  constructor(public capacity: number) {}
  async call(): Promise<void> {
    this.inFlight++;
    try {
      if (this.inFlight > this.capacity * 1.5) {
        await sleep(5);
        throw new Error("503 downstream overloaded");
      }
      await sleep(BASE_MS * Math.max(1, this.inFlight / this.capacity));
    } finally {
      this.inFlight--;
    }
  }
}

interface Sample {
  t: number;
  limit: number | null;
  inFlight: number;
}

interface Settle {
  t: number;
  ok: boolean;
}

export interface RunFigure {
  queue: string;
  seconds: number;
  goodputPerSec: number;
  failureRate: number;
  succeeded: number;
  failed: number;
  peakInFlight: number;
  loadavg: { start: Load; end: Load };
  [extra: string]: unknown;
}

export interface AdaptiveReport {
  scenario: "adaptive";
  seconds: number;
  followSeconds: number;
  gateways: number;
  workers: string;
  downstream: { capacity: number; baseMs: number; failsAbove: number; halvedTo: number };
  adaptive: typeof ADAPTIVE;
  machine: MachineInfo;
  fixed: Record<string, RunFigure | { error: string }>;
  adaptiveRun: RunFigure | { error: string };
  bestFixed: string | null;
  adaptiveVsBestFixed: number | null;
  loadavg: { start: Load; end: Load };
}

interface Ctx {
  fleet: GatewayFleet;
  pool: pg.Pool;
  tag: string;
  seconds: number;
  followSeconds: number;
  log: (m: string) => void;
}

/** From when the limit enters the band around `capacity` and stays there to the end; see the header. */
function bandFigures(samples: readonly Sample[], from: number, to: number, capacity: number) {
  const inBand = (s: Sample) => s.limit !== null && Math.abs(s.limit - capacity) <= capacity * BAND;
  const phase = samples.filter((s) => s.t >= from && s.t < to);
  const first = phase.find(inBand);
  let settled: Sample | undefined;
  for (let i = phase.length - 1; i >= 0; i--) {
    const s = phase[i];
    if (!s || !inBand(s)) break;
    settled = s;
  }
  const after = first ? phase.filter((s) => s.t >= first.t) : [];
  return {
    firstInBandMs: first ? Math.round(first.t - from) : null,
    settleMs: settled ? Math.round(settled.t - from) : null,
    inBandShare: after.length ? r4(after.filter(inBand).length / after.length) : null,
    meanLimit: after.length ? r1(after.reduce((s, x) => s + (x.limit ?? 0), 0) / after.length) : null,
  };
}

async function runOne(ctx: Ctx, cap: number | null): Promise<RunFigure> {
  const queue = `adaptive-${cap ?? "auto"}-${ctx.tag}`;
  const gw0 = ctx.fleet.members[0];
  if (!gw0) throw new Error("no gateway");
  await gw0.admin.ensureQueue({ queue, profile: { max_running: cap ?? ADAPTIVE.min } as JsonObject });
  if (cap === null) await gw0.admin.setAdaptiveConcurrency({ queue, ...ADAPTIVE });
  const downstream = new Downstream(CAPACITY);
  const spec: EnqueueSpec = { queue, maxAttempts: 1 };
  let enqueued = 0;
  let started = 0;
  const enqueueBatch = async (n: number) => {
    await gw0.client.enqueueBatch(Array.from({ length: n }, () => spec));
    enqueued += n;
  };
  for (let i = 0; i < BACKLOG_LOW + ENQUEUE_BATCH * 2; i += ENQUEUE_BATCH) await enqueueBatch(ENQUEUE_BATCH);
  await ctx.pool.query("analyze taskq.live_jobs");

  const settles: Settle[] = [];
  let peakInFlight = 0;
  let t0 = 0;
  const handler = async () => {
    if (t0 === 0) t0 = Date.now();
    started++;
    try {
      const call = downstream.call();
      peakInFlight = Math.max(peakInFlight, downstream.inFlight);
      await call;
      settles.push({ t: Date.now(), ok: true });
    } catch (err) {
      settles.push({ t: Date.now(), ok: false });
      throw err;
    }
  };
  const loadStart = load();
  const workers = Array.from({ length: WORKERS }, (_, i) => {
    const m = ctx.fleet.members[i % ctx.fleet.members.length];
    if (!m) throw new Error("no gateway");
    return new Worker({
      baseUrl: "unused (transport given)",
      transport: m.transport,
      queues: [queue],
      concurrency: SLOTS,
      prefetch: 0,
      handler,
      logger: silentLogger,
    });
  });

  let running = true;
  let feederError: unknown;
  const feeder = (async () => {
    while (running) {
      try {
        if (enqueued - started < BACKLOG_LOW) await enqueueBatch(ENQUEUE_BATCH);
        else await sleep(50);
      } catch (err) {
        feederError = err;
        return;
      }
    }
  })();
  const samples: Sample[] = [];
  const sampler = (async () => {
    while (running) {
      const r = await ctx.pool.query<{ n: number | null }>(
        "select max_running as n from taskq.queues where name = $1",
        [queue],
      );
      samples.push({ t: Date.now(), limit: r.rows[0]?.n ?? null, inFlight: downstream.inFlight });
      await sleep(SAMPLE_MS);
    }
  })();
  const phaseMs = ctx.seconds * 1000;
  let halvedAt = Number.POSITIVE_INFINITY;
  try {
    await Promise.all(workers.map((w) => w.start()));
    await waitUntil(async () => t0 !== 0, 10, 30_000);
    ctx.log(`adaptive ${queue}: first claim; ${ctx.seconds} s at capacity ${CAPACITY}`);
    await sleep(t0 + phaseMs - Date.now());
    if (cap === null) {
      downstream.capacity = CAPACITY / 2;
      halvedAt = Date.now();
      ctx.log(`adaptive ${queue}: capacity halved to ${downstream.capacity}; ${ctx.followSeconds} s more`);
      await sleep(ctx.followSeconds * 1000);
    }
  } finally {
    running = false;
    await Promise.all(workers.map((w) => w.stop({ graceMs: 2_000 })));
    await Promise.all([feeder, sampler]);
  }
  if (feederError) throw feederError;
  const phaseEnd = t0 + phaseMs;
  const inPhase = settles.filter((s) => s.t >= t0 && s.t < phaseEnd);
  const ok = inPhase.filter((s) => s.ok).length;
  const all = cap === null ? settles : inPhase;
  const failed = all.filter((s) => !s.ok).length;
  const base: RunFigure = {
    queue,
    seconds: ctx.seconds,
    goodputPerSec: r1(ok / ctx.seconds),
    failureRate: all.length ? r4(failed / all.length) : 0,
    succeeded: all.length - failed,
    failed,
    peakInFlight,
    loadavg: { start: loadStart, end: load() },
  };
  if (cap !== null) return base;
  const settle = bandFigures(samples, t0, phaseEnd, CAPACITY);
  const follow = bandFigures(samples, halvedAt, halvedAt + ctx.followSeconds * 1000, CAPACITY / 2);
  const steadyFrom = settle.settleMs === null ? null : t0 + settle.settleMs;
  const steady = steadyFrom === null ? [] : inPhase.filter((s) => s.ok && s.t >= steadyFrom);
  const changes = await ctx.pool.query<{ at_ms: number; limit_after: number | null; reason: string }>(
    `select (extract(epoch from at) * 1000)::float8 as at_ms, limit_after, reason
     from taskq.adaptive_changes where queue = $1 order by id`,
    [queue],
  );
  const halvedOk = settles.filter((s) => s.ok && s.t >= halvedAt).length;
  return {
    ...base,
    steadyGoodputPerSec:
      steadyFrom === null || phaseEnd - steadyFrom < 1000
        ? null
        : r1(steady.length / ((phaseEnd - steadyFrom) / 1000)),
    settle,
    follow: { ...follow, followMs: follow.settleMs, goodputPerSec: r1(halvedOk / ctx.followSeconds) },
    failureRateAtCapacity: inPhase.length ? r4(inPhase.filter((s) => !s.ok).length / inPhase.length) : 0,
    limit: samples.map((s) => [Math.round(s.t - t0), s.limit, s.inFlight]),
    changes: changes.rows.map((c) => [Math.round(c.at_ms - t0), c.limit_after, c.reason]),
  };
}

export const adaptiveScenario: Scenario<AdaptiveReport> = {
  name: "adaptive",
  summary: "adaptive max_running against a mock downstream: settle time, goodput vs fixed caps, follow",
  async run(options) {
    const seconds = options.seconds ?? 60;
    const gateways = options.gateways ?? 3;
    const machine = machineInfo();
    const loadStart = load();
    const db = await createThrowawayDatabase(options.config.pgAdminUrl, "adaptive");
    let fleet: GatewayFleet | undefined;
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      options.log(`adaptive: starting ${gateways} gateways`);
      fleet = await startGatewayFleet({
        count: gateways,
        databaseUrl: db.url,
        redisUrl: options.config.redisUrl,
        log: options.log,
      });
      const followSeconds = Math.min(FOLLOW_S, seconds);
      const ctx: Ctx = {
        fleet,
        pool,
        tag: `${process.pid}-${Date.now().toString(36)}`,
        seconds,
        followSeconds,
        log: options.log,
      };
      // `--only fixed-40,adaptive` runs just those.
      const wanted = (name: string) => options.only === null || options.only.includes(name);
      const fixed: AdaptiveReport["fixed"] = {};
      for (const cap of FIXED_CAPS.filter((c) => wanted(`fixed-${c}`))) {
        options.log(`adaptive: fixed max_running ${cap}, ${seconds} s…`);
        try {
          fixed[`fixed-${cap}`] = await runOne(ctx, cap);
          options.log(`adaptive: fixed-${cap}: ${JSON.stringify(fixed[`fixed-${cap}`])}`);
        } catch (err) {
          fixed[`fixed-${cap}`] = { error: err instanceof Error ? err.message : String(err) };
        }
      }
      let adaptiveRun: AdaptiveReport["adaptiveRun"] = { error: NOT_RUN };
      if (wanted("adaptive")) {
        options.log(
          `adaptive: ${JSON.stringify(ADAPTIVE)}, ${seconds} s + ${followSeconds} s at half capacity…`,
        );
        try {
          adaptiveRun = await runOne(ctx, null);
        } catch (err) {
          adaptiveRun = { error: err instanceof Error ? err.message : String(err) };
        }
      }
      let bestFixed: string | null = null;
      for (const [name, f] of Object.entries(fixed)) {
        if ("error" in f) continue;
        const best = bestFixed ? fixed[bestFixed] : undefined;
        if (!best || "error" in best || f.goodputPerSec > best.goodputPerSec) bestFixed = name;
      }
      const best = bestFixed ? fixed[bestFixed] : undefined;
      return {
        scenario: "adaptive",
        seconds,
        followSeconds,
        gateways,
        workers: `${WORKERS} SDK Workers × concurrency ${SLOTS}, prefetch 0, round-robin over ${gateways} gateways`,
        downstream: {
          capacity: CAPACITY,
          baseMs: BASE_MS,
          failsAbove: CAPACITY * 1.5,
          halvedTo: CAPACITY / 2,
        },
        adaptive: ADAPTIVE,
        machine,
        fixed,
        adaptiveRun,
        bestFixed,
        adaptiveVsBestFixed:
          best && !("error" in best) && !("error" in adaptiveRun) && best.goodputPerSec > 0
            ? r4(adaptiveRun.goodputPerSec / best.goodputPerSec)
            : null,
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
    ("error" in report.adaptiveRun && report.adaptiveRun.error !== NOT_RUN) ||
    Object.values(report.fixed).some((f) => "error" in f),
  table(report) {
    const rows = [["run", "goodput/s", "failure rate", "peak in flight", "settle ms", "follow ms"]];
    for (const [name, f] of Object.entries(report.fixed))
      rows.push(
        "error" in f
          ? [name, String(f.error), "", "", "", ""]
          : [name, String(f.goodputPerSec), String(f.failureRate), String(f.peakInFlight), "-", "-"],
      );
    const a = report.adaptiveRun;
    if ("error" in a) rows.push(["adaptive", String(a.error), "", "", "", ""]);
    else {
      const settle = a.settle as { settleMs: number | null };
      const follow = a.follow as { followMs: number | null };
      rows.push([
        "adaptive",
        `${a.goodputPerSec} (steady ${String(a.steadyGoodputPerSec ?? "-")})`,
        String(a.failureRate),
        String(a.peakInFlight),
        String(settle.settleMs ?? "-"),
        String(follow.followMs ?? "-"),
      ]);
    }
    return `${textTable(rows)}\nbest fixed: ${report.bestFixed ?? "-"}; adaptive / best fixed: ${report.adaptiveVsBestFixed ?? "-"}`;
  },
};
