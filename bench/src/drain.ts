import { createThrowawayDatabase, type MachineInfo, machineInfo } from "./infra.js";
import { defaultLatencyOptions, type LatencyResult } from "./latency.js";
import type { DrainResult, PeerAdapter, PeerFactory } from "./peers/adapter.js";
import { peers } from "./peers/index.js";
import { type Scenario, type ScenarioOptions, textTable } from "./scenario.js";

/** One peer's line in the report: its numbers, or why it has none. */
export type PeerReport =
  | (DrainResult & {
      /** Bulk enqueue rate of the timed batch (not part of the drain time), jobs/s. */
      enqueuePerSec: number;
      /** jobs/s of every timed run when `--runs` > 1; the fields above are from the median one. */
      runs?: number[];
      /** Enqueue→handler-start at a steady rate (`--latency`), or why it was not measured. */
      latency?: LatencyResult | { error: string };
    })
  | { error: string };

export interface DrainReport {
  scenario: "drain";
  jobs: number;
  concurrency: number;
  warmup: number;
  runs: number;
  machine: MachineInfo;
  results: Record<string, PeerReport>;
  ratios: {
    /** taskq jobs/s over the fastest other peer's; null until a taskq adapter ran. */
    "taskq/best-peer": number | null;
  };
  /** Name of the fastest non-taskq peer. */
  bestPeer: string | null;
}

async function runPeer(factory: PeerFactory, options: ScenarioOptions): Promise<PeerReport> {
  const { config, log, jobs, concurrency, warmup } = options;
  const db = await createThrowawayDatabase(config.pgAdminUrl, factory.name);
  let adapter: PeerAdapter | undefined;
  try {
    adapter = factory.create({
      databaseUrl: db.url,
      redisUrl: config.redisUrl,
      keyPrefix: `taskq-bench-${process.pid}-${factory.name}`,
      log,
    });
    await adapter.setup();
    if (warmup > 0) {
      await adapter.enqueue(warmup);
      await adapter.drain(warmup, concurrency);
    }
    // Repeated runs on a shared two-core box vary by ±30%; the median run is the one reported.
    const runs: (DrainResult & { enqueuePerSec: number })[] = [];
    for (let i = 0; i < options.runs; i++) {
      const enqueueStart = performance.now();
      await adapter.enqueue(jobs);
      const enqueuePerSec = Math.round(jobs / ((performance.now() - enqueueStart) / 1000));
      log(`${factory.name}: enqueued ${jobs} at ${enqueuePerSec} jobs/s, draining…`);
      const drained = await adapter.drain(jobs, concurrency);
      log(`${factory.name}: ${drained.jobsPerSec} jobs/s (${drained.ms} ms)`);
      runs.push({ ...drained, enqueuePerSec });
    }
    const sorted = [...runs].sort((a, b) => a.jobsPerSec - b.jobsPerSec);
    const median = sorted[Math.floor((sorted.length - 1) / 2)];
    if (!median) throw new Error("--runs must be at least 1");
    const { enqueuePerSec, ...result } = median;
    const report: PeerReport = { ...result, enqueuePerSec };
    if (runs.length > 1) report.runs = runs.map((r) => r.jobsPerSec);
    if (options.latency && adapter.latency) {
      report.latency = await measurePeerLatency(factory.name, adapter.latency.bind(adapter), result, options);
    }
    return report;
  } finally {
    try {
      await adapter?.teardown();
    } finally {
      await db.drop();
    }
  }
}

/**
 * The latency sub-measure for one peer. A peer that drains slower than the offered rate would only
 * show its backlog growing, so it is skipped with a reason; a failure here keeps the drain numbers.
 */
async function measurePeerLatency(
  name: string,
  latency: NonNullable<PeerAdapter["latency"]>,
  drained: DrainResult,
  { concurrency, log }: ScenarioOptions,
): Promise<LatencyResult | { error: string }> {
  const { ratePerSec, seconds } = defaultLatencyOptions;
  if (drained.jobsPerSec < ratePerSec * 1.2) {
    return {
      error: `skipped: drains ${drained.jobsPerSec} jobs/s, too close to the offered ${ratePerSec}/s`,
    };
  }
  log(`${name}: latency at ${ratePerSec} jobs/s for ${seconds} s…`);
  try {
    const r = await latency({ ...defaultLatencyOptions, concurrency });
    log(`${name}: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms`);
    return r;
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

/** Ratio of taskq's drain rate to the best other peer's, when both are present. */
function ratios(results: Record<string, PeerReport>): Pick<DrainReport, "ratios" | "bestPeer"> {
  let bestPeer: string | null = null;
  let best = 0;
  for (const [name, r] of Object.entries(results)) {
    if (name !== "taskq" && "jobsPerSec" in r && r.jobsPerSec > best) {
      best = r.jobsPerSec;
      bestPeer = name;
    }
  }
  const taskq = results.taskq;
  const ratio =
    taskq && "jobsPerSec" in taskq && best > 0 ? Math.round((taskq.jobsPerSec / best) * 100) / 100 : null;
  return { ratios: { "taskq/best-peer": ratio }, bestPeer };
}

/**
 * Drains the same backlog of no-op jobs through every peer, one after another in this process, on the
 * same Postgres and Redis, and compares jobs/s. Each peer gets a fresh database and key prefix.
 */
export const drainScenario: Scenario<DrainReport> = {
  name: "drain",
  summary: "drain N no-op jobs through each peer at fixed concurrency; jobs/s (+ latency with --latency)",
  async run(options) {
    const selected = options.only ? peers.filter((p) => options.only?.includes(p.name)) : peers;
    const unknown = options.only?.filter((n) => !peers.some((p) => p.name === n)) ?? [];
    if (unknown.length > 0) {
      throw new Error(
        `unknown peer(s): ${unknown.join(", ")}; known: ${peers.map((p) => p.name).join(", ")}`,
      );
    }
    const machine = machineInfo(); // before we add load of our own
    const results: Record<string, PeerReport> = {};
    for (const factory of selected) {
      try {
        results[factory.name] = await runPeer(factory, options);
      } catch (err) {
        // One broken peer must not hide the others' numbers; the report says what failed.
        const message = err instanceof Error ? err.message : String(err);
        options.log(`${factory.name}: FAILED ${message}`);
        results[factory.name] = { error: message };
      }
    }
    return {
      scenario: "drain",
      jobs: options.jobs,
      concurrency: options.concurrency,
      warmup: options.warmup,
      runs: options.runs,
      machine,
      results,
      ...ratios(results),
    };
  },
  // A peer that failed is in the report, but the run as a whole did not succeed.
  failed: (report) => Object.values(report.results).some((r) => "error" in r),
  table(report) {
    const rows = [["peer", "jobs/s", "drain ms", "enqueue jobs/s", "p50 ms", "p99 ms", "note"]];
    for (const [name, r] of Object.entries(report.results)) {
      if ("error" in r) {
        rows.push([name, "-", "-", "-", "-", "-", `FAILED: ${r.error}`]);
        continue;
      }
      const lat = r.latency && "p50Ms" in r.latency ? r.latency : undefined;
      rows.push([
        name,
        String(r.jobsPerSec),
        String(r.ms),
        String(r.enqueuePerSec),
        lat ? String(lat.p50Ms) : "-",
        lat ? String(lat.p99Ms) : "-",
        [
          r.runs ? `runs ${r.runs.join(" / ")}` : undefined,
          r.note,
          r.latency && "error" in r.latency ? `latency ${r.latency.error}` : undefined,
        ]
          .filter(Boolean)
          .join("; "),
      ]);
    }
    const m = report.machine;
    const head =
      `drain: ${report.jobs} jobs, concurrency ${report.concurrency}, ` +
      `${m.cpus} × ${m.cpuModel}, node ${m.node}, load ${m.loadavg1} at start`;
    const ratio = report.ratios["taskq/best-peer"];
    const foot = ratio === null ? "" : `\ntaskq / ${report.bestPeer}: ${ratio}×`;
    return `${head}\n\n${textTable(rows)}${foot}`;
  },
};
