// `bench drain --latency`: enqueue → handler start at fixed offered rates, after the drains. The rounds
// interleave like the drains' (round 1 of every peer at every rate, then round 2, …), so two entrants
// of one run, such as the default taskq worker and `taskq-prefetch --prefetch 0`, meet the same drift
// of a shared machine; each percentile is the median over the rounds.
import pg from "pg";
import type { CpuPerJob } from "./cpu-meter.js";
import { cpuLine, cpuMeter, type Entrant, type Meters, message } from "./drain-entrant.js";
import { type LatencyReport, type LatencyRun, medianRun } from "./drain-report.js";
import { loadavg1 } from "./infra.js";
import { defaultLatencyOptions } from "./latency.js";
import type { ScenarioOptions } from "./scenario.js";

/** Offered rates of the `--latency` sub-measure, jobs/s. */
export const LATENCY_RATES = [1_000, 5_000] as const;

/**
 * VACUUM ANALYZE a Postgres peer's database, so its latency is measured in the steady state autovacuum
 * keeps, not amid the dead rows of the drains and rounds just run (which a claim or fetch steps over
 * until the next vacuum, and which the peers leave in different amounts).
 */
async function vacuum(e: Entrant): Promise<void> {
  if (!e.db || !e.adapter?.stores.includes("postgres")) return;
  const c = new pg.Client({ connectionString: e.db.url });
  await c.connect();
  try {
    await c.query("VACUUM ANALYZE");
  } finally {
    await c.end();
  }
}

/**
 * Why a peer sits a rate out: one whose median drain is slower than 1.2× the offered rate would only
 * show its backlog growing.
 */
function skipReason(e: Entrant, ratePerSec: number): string | undefined {
  if (e.runs.length === 0) return "no drain ran";
  const { jobsPerSec } = medianRun(e.runs);
  return jobsPerSec < ratePerSec * 1.2
    ? `skipped: drains ${jobsPerSec} jobs/s, too close to the offered ${ratePerSec}/s`
    : undefined;
}

/** One round of one peer at one rate, with each of its processes' CPU per job over the round. */
async function latencyRun(
  e: Entrant,
  ratePerSec: number,
  meters: Meters,
  { concurrency, log }: ScenarioOptions,
): Promise<LatencyRun> {
  const latency = e.adapter?.latency?.bind(e.adapter);
  if (!latency) throw new Error("no latency()");
  const { seconds, warmupSeconds } = defaultLatencyOptions;
  await vacuum(e);
  const load = loadavg1();
  log(`${e.factory.name}: load ${load}, latency at ${ratePerSec} jobs/s for ${seconds} s…`);
  const meter = cpuMeter(e, meters);
  try {
    await meter.open();
    const r = await latency({ ...defaultLatencyOptions, ratePerSec, concurrency });
    await meter.close();
    // Every job of the run, warm-up included: the meter saw them all.
    const cpuUsPerJob = meter.perJob(Math.round((warmupSeconds + seconds) * ratePerSec));
    log(
      `${e.factory.name}: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms at ${ratePerSec}/s (load ${load}); CPU µs/job ${cpuLine(cpuUsPerJob)}`,
    );
    return { ...r, cpuUsPerJob, loadavg1: load };
  } finally {
    await meter.cancel();
  }
}

/** The middle value (the lower middle one for an even count). */
function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
}

/** Each figure's median over the rounds (each on its own), the highest load, and every round. */
export function summarize(runs: readonly LatencyRun[]): LatencyReport {
  const of = (pick: (r: LatencyRun) => number) => median(runs.map(pick));
  const processes = [...new Set(runs.flatMap((r) => Object.keys(r.cpuUsPerJob)))];
  const cpuUsPerJob: CpuPerJob = { worker: of((r) => r.cpuUsPerJob.worker) };
  for (const p of processes) {
    const values = runs.flatMap((r) => (r.cpuUsPerJob[p] === undefined ? [] : [r.cpuUsPerJob[p]]));
    if (values.length > 0) cpuUsPerJob[p] = median(values);
  }
  return {
    ratePerSec: of((r) => r.ratePerSec),
    samples: of((r) => r.samples),
    p50Ms: of((r) => r.p50Ms),
    p99Ms: of((r) => r.p99Ms),
    maxMs: of((r) => r.maxMs),
    cpuUsPerJob,
    loadavg1: Math.max(...runs.map((r) => r.loadavg1)),
    runs: [...runs],
  };
}

/**
 * `--runs` rounds of every entrant whose adapter measures latency, at every rate. A rate an entrant
 * sits out, or one whose round failed, is reported with the reason and not run again; a failure here
 * keeps the drain's numbers.
 */
export async function latencyRounds(
  all: readonly Entrant[],
  meters: Meters,
  options: ScenarioOptions,
): Promise<void> {
  const entrants = all.filter((e) => e.error === undefined && e.adapter?.latency !== undefined);
  const runs = new Map<Entrant, Map<number, LatencyRun[]>>();
  const errors = new Map<Entrant, Map<number, string>>();
  for (const e of entrants) {
    runs.set(e, new Map(LATENCY_RATES.map((rate) => [rate, []])));
    errors.set(e, new Map());
    for (const rate of LATENCY_RATES) {
      const reason = skipReason(e, rate);
      if (reason !== undefined) errors.get(e)?.set(rate, reason);
    }
  }
  for (let round = 1; round <= options.runs; round++) {
    options.log(`latency round ${round} of ${options.runs}`);
    for (const rate of LATENCY_RATES) {
      for (const e of entrants) {
        if (errors.get(e)?.has(rate)) continue;
        try {
          runs
            .get(e)
            ?.get(rate)
            ?.push(await latencyRun(e, rate, meters, options));
        } catch (err) {
          errors.get(e)?.set(rate, message(err));
          options.log(`${e.factory.name}: latency at ${rate}/s FAILED ${message(err)}`);
        }
      }
    }
  }
  for (const e of entrants) {
    const latency: Record<string, LatencyReport> = {};
    for (const rate of LATENCY_RATES) {
      const error = errors.get(e)?.get(rate);
      const done = runs.get(e)?.get(rate) ?? [];
      if (error !== undefined) latency[rate] = { error };
      else if (done.length > 0) latency[rate] = summarize(done);
    }
    if (Object.keys(latency).length > 0) e.latency = latency;
  }
}
