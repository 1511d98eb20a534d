import pg from "pg";
import { attempt, cpuLine, cpuMeter, type Entrant, type Meters, message } from "./drain-entrant.js";
import { latencyRounds } from "./drain-latency.js";
import { drainMarkdown } from "./drain-markdown.js";
import { type DrainReport, drainTable, medianRun, type PeerReport, ratios } from "./drain-report.js";
import { createThrowawayDatabase, loadavg1, machineInfo, redisPid } from "./infra.js";
import { unmeteredWindow } from "./peers/adapter.js";
import { optionalPeers, peers } from "./peers/index.js";
import type { Scenario, ScenarioOptions } from "./scenario.js";

export type { DrainReport, PeerReport } from "./drain-report.js";

/** taskq-prefetch's prefetch without `--prefetch`: graphile-worker's documented local queue. */
const DEFAULT_PREFETCH = 500;

async function setUp(e: Entrant, { config, log, jobMs, prefetch }: ScenarioOptions): Promise<void> {
  e.db = await createThrowawayDatabase(config.pgAdminUrl, e.factory.name);
  e.adapter = e.factory.create({
    databaseUrl: e.db.url,
    redisUrl: config.redisUrl,
    keyPrefix: `taskq-bench-${process.pid}-${e.factory.name}`,
    jobMs,
    prefetch: prefetch ?? DEFAULT_PREFETCH,
    log,
  });
  await e.adapter.setup();
}

async function warmUp(e: Entrant, { warmup, concurrency }: ScenarioOptions): Promise<void> {
  if (!e.adapter || warmup === 0) return;
  await e.adapter.enqueue(warmup);
  await e.adapter.drain(warmup, concurrency, unmeteredWindow);
}

/** One timed run: enqueue the batch, then drain it with CPU metered over the drain's window. */
async function timedRun(e: Entrant, meters: Meters, { jobs, concurrency, log }: ScenarioOptions) {
  const adapter = e.adapter;
  if (!adapter || !e.db) throw new Error("not set up");
  const load = loadavg1();
  const enqueueStart = performance.now();
  await adapter.enqueue(jobs);
  const enqueuePerSec = Math.round(jobs / ((performance.now() - enqueueStart) / 1000));
  log(`${adapter.name}: load ${load}, enqueued ${jobs} at ${enqueuePerSec} jobs/s, draining…`);
  const meter = cpuMeter(e, meters);
  try {
    const { note, polls, ...drained } = await adapter.drain(jobs, concurrency, meter);
    const jobsPerPoll = polls ? Math.round((10 * jobs) / polls) / 10 : undefined;
    const cpuUsPerJob = meter.perJob(jobs);
    const cpu = cpuLine(cpuUsPerJob);
    const perPoll = jobsPerPoll === undefined ? "" : `; ${jobsPerPoll} jobs/poll`;
    log(`${adapter.name}: ${drained.jobsPerSec} jobs/s (${drained.ms} ms); CPU µs/job: ${cpu}${perPoll}`);
    e.note = note;
    e.runs.push({ ...drained, enqueuePerSec, loadavg1: load, cpuUsPerJob, jobsPerPoll });
  } finally {
    await meter.cancel();
  }
}

/** Teardown and database drop; never throws (a failure is recorded on the peer and logged). */
async function tearDown(e: Entrant, log: ScenarioOptions["log"]): Promise<void> {
  for (const [label, step] of [
    ["teardown", () => e.adapter?.teardown()],
    ["drop database", () => e.db?.drop()],
  ] as const) {
    try {
      await step();
    } catch (err) {
      e.error ??= `${label}: ${message(err)}`;
      log(`${e.factory.name}: ${label} FAILED ${message(err)}`);
    }
  }
}

function peerReport(e: Entrant): PeerReport {
  if (e.error !== undefined) return { error: e.error };
  const report: PeerReport = { ...medianRun(e.runs), runs: e.runs };
  if (e.note !== undefined) report.note = e.note;
  if (e.latency !== undefined) report.latency = e.latency;
  return report;
}

/**
 * Drains the same backlog of no-op jobs through every selected peer in this process, on the same
 * Postgres and Redis, each peer in its own throwaway database and key prefix. All peers are set up and
 * warmed up first; then the timed runs are interleaved (round 1 of every peer, round 2 of every peer, …)
 * so a slow drift of a shared machine hits every system alike, and the median run is reported.
 */
export const drainScenario: Scenario<DrainReport> = {
  name: "drain",
  summary: "drain N no-op jobs through each peer at fixed concurrency; jobs/s, CPU/job (+ latency)",
  async run(options) {
    const known = [...peers, ...optionalPeers];
    const selected = options.only ? known.filter((p) => options.only?.includes(p.name)) : peers;
    const unknown = options.only?.filter((n) => !known.some((p) => p.name === n)) ?? [];
    if (unknown.length > 0) {
      throw new Error(
        `unknown peer(s): ${unknown.join(", ")}; known: ${known.map((p) => p.name).join(", ")}`,
      );
    }
    const { log } = options;
    const machine = machineInfo(); // before we add load of our own
    const entrants: Entrant[] = selected.map((factory) => ({ factory, runs: [] }));
    const admin = new pg.Client({ connectionString: options.config.pgAdminUrl });
    admin.on("error", (err) => log(`admin connection: ${err.message}`));
    try {
      await admin.connect();
      const meters: Meters = { admin, redisPid: await redisPid(options.config.redisUrl) };
      for (const e of entrants) await attempt(e, "setup", log, () => setUp(e, options));
      for (const e of entrants) await attempt(e, "warm-up", log, () => warmUp(e, options));
      for (let round = 1; round <= options.runs; round++) {
        log(`round ${round} of ${options.runs}`);
        for (const e of entrants) await attempt(e, `run ${round}`, log, () => timedRun(e, meters, options));
      }
      if (options.latency) await latencyRounds(entrants, meters, options);
    } finally {
      for (const e of entrants) await tearDown(e, log);
      await admin.end();
    }
    const results: Record<string, PeerReport> = {};
    for (const e of entrants) results[e.factory.name] = peerReport(e);
    return {
      scenario: "drain",
      jobs: options.jobs,
      concurrency: options.concurrency,
      prefetch: options.prefetch ?? DEFAULT_PREFETCH,
      warmup: options.warmup,
      runs: options.runs,
      machine,
      results,
      ...ratios(results),
    };
  },
  // A peer that failed is in the report, but the run as a whole did not succeed.
  failed: (report) => Object.values(report.results).some((r) => "error" in r),
  table: drainTable,
  readmeKey: (options) => (options.latency ? "drain-latency" : "drain"),
  markdown: drainMarkdown,
};
