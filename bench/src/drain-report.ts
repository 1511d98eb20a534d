import type { CpuPerJob } from "./cpu-meter.js";
import type { MachineInfo } from "./infra.js";
import type { LatencyResult } from "./latency.js";
import { textTable } from "./scenario.js";

/** One timed drain of one peer. */
export interface RunReport {
  /** `jobs / (ms / 1000)`. */
  jobsPerSec: number;
  /** Milliseconds from starting the workers until the last completion was recorded. */
  ms: number;
  /** Bulk enqueue rate of the timed batch (not part of the drain time), jobs/s. */
  enqueuePerSec: number;
  /** 1-minute load average when this run started (before its enqueue). */
  loadavg1: number;
  /** CPU per job in µs over the timed drain, per process (see `CpuPerJob`). */
  cpuUsPerJob: CpuPerJob;
  /**
   * Jobs per poll, where the peer counts its polls (taskq): CPU per job times this is CPU per poll.
   * At concurrency 1 without prefetch it is 1, and CPU per job is the fixed cost of one poll.
   */
  jobsPerPoll?: number;
}

/**
 * One round of enqueue→handler-start at one offered rate, with each process's CPU per job over it
 * (warm-up included: a busier machine queues more, which is what lengthens a tail).
 */
export interface LatencyRun extends LatencyResult {
  cpuUsPerJob: CpuPerJob;
  /** 1-minute load average when this round started. */
  loadavg1: number;
}

/**
 * Enqueue→handler-start at one offered rate over `--runs` interleaved rounds: each figure the median
 * of the rounds' (each on its own, so p50 and p99 may come from different rounds), `loadavg1` the
 * highest any round started at, and every round in `runs`; or why it was not measured.
 */
export type LatencyReport = (LatencyRun & { runs: LatencyRun[] }) | { error: string };

/** One peer's line in the report: its median run and every run, or why it has none. */
export type PeerReport =
  | (RunReport & {
      /** What bounds this peer's number, when it is the library's design rather than the machine. */
      note?: string;
      /** Every timed run in the order run; the fields above are the median one's (by jobs/s). */
      runs: RunReport[];
      /** `--latency`: by offered rate in jobs/s ("1000", "5000"). */
      latency?: Record<string, LatencyReport>;
    })
  | { error: string };

export interface DrainReport {
  scenario: "drain";
  jobs: number;
  concurrency: number;
  /** The taskq-prefetch worker's prefetch (`--prefetch`); the `taskq` worker is given none (the SDK's default). */
  prefetch: number;
  warmup: number;
  runs: number;
  machine: MachineInfo;
  results: Record<string, PeerReport>;
  ratios: {
    /** taskq jobs/s over the fastest other peer's; null until a taskq adapter ran. */
    "taskq/best-peer": number | null;
    /** The same for each taskq entry (`taskq-prefetch/best-peer`, …). */
    [taskqEntryOverBest: `${string}/best-peer`]: number | null;
    /** taskq's Postgres CPU per job over each Postgres peer's, keyed `taskq/<peer>` (lower is better). */
    postgresUsPerJob: Record<string, number>;
  };
  /** Name of the fastest non-taskq peer. */
  bestPeer: string | null;
}

/** The median run by jobs/s (the lower middle one for an even count). */
export function medianRun<R extends { jobsPerSec: number }>(runs: readonly R[]): R {
  const sorted = [...runs].sort((a, b) => a.jobsPerSec - b.jobsPerSec);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  if (!median) throw new Error("no runs");
  return median;
}

const ratio = (a: number, b: number): number => Math.round((a / b) * 100) / 100;

/** taskq's own entries (the default worker, taskq-prefetch), each compared against the other systems. */
export const isTaskq = (name: string) => name === "taskq" || name.startsWith("taskq-");

/** taskq against the others: drain rate over the best peer's, Postgres CPU per job over each one's. */
export function ratios(results: Record<string, PeerReport>): Pick<DrainReport, "ratios" | "bestPeer"> {
  let bestPeer: string | null = null;
  let best = 0;
  for (const [name, r] of Object.entries(results)) {
    if (!isTaskq(name) && "jobsPerSec" in r && r.jobsPerSec > best) {
      best = r.jobsPerSec;
      bestPeer = name;
    }
  }
  const vsBest: Record<string, number | null> = {};
  const postgresUsPerJob: Record<string, number> = {};
  for (const [ours, t] of Object.entries(results)) {
    if (!isTaskq(ours) || !("jobsPerSec" in t)) continue;
    vsBest[`${ours}/best-peer`] = best > 0 ? ratio(t.jobsPerSec, best) : null;
    const oursPg = t.cpuUsPerJob.postgres;
    for (const [name, r] of Object.entries(results)) {
      const peerPg = "cpuUsPerJob" in r ? r.cpuUsPerJob.postgres : undefined;
      if (!isTaskq(name) && oursPg !== undefined && peerPg)
        postgresUsPerJob[`${ours}/${name}`] = ratio(oursPg, peerPg);
    }
  }
  return {
    ratios: { "taskq/best-peer": vsBest["taskq/best-peer"] ?? null, ...vsBest, postgresUsPerJob },
    bestPeer,
  };
}

const cell = (x: number | undefined): string => (x === undefined ? "-" : String(x));

/** The drain report as rows: a header, then one row per peer. */
export function drainRows(report: DrainReport): string[][] {
  const ok = Object.values(report.results).filter((r) => "runs" in r);
  // Child processes are named by their adapters (taskq: gateway); one column each.
  const children = [
    ...new Set(
      ok.flatMap((r) =>
        Object.keys(r.cpuUsPerJob).filter((k) => !["worker", "postgres", "redis"].includes(k)),
      ),
    ),
  ];
  const rates = [...new Set(ok.flatMap((r) => Object.keys(r.latency ?? {})))];
  const cpuColumns = ["worker", ...children, "postgres", "redis"];
  const rows = [
    [
      "peer",
      "jobs/s",
      "drain ms",
      "enqueue jobs/s",
      "load",
      "jobs/poll",
      ...cpuColumns.map((c) => `${c} µs/job`),
      ...rates.map((rate) => `p50/p99 ms @${rate}/s`),
      "note",
    ],
  ];
  for (const [name, r] of Object.entries(report.results)) {
    if ("error" in r) {
      rows.push([name, ...Array(5 + cpuColumns.length + rates.length).fill("-"), `FAILED: ${r.error}`]);
      continue;
    }
    const notes = [
      r.runs.length > 1
        ? `runs ${r.runs.map((run) => `${run.jobsPerSec} (load ${run.loadavg1})`).join(" / ")}`
        : undefined,
      r.note,
    ];
    const latencies = rates.map((rate) => {
      const lat = r.latency?.[rate];
      if (lat && "error" in lat) notes.push(`@${rate}/s ${lat.error}`);
      if (lat && "runs" in lat && lat.runs.length > 1) {
        const each = lat.runs.map((run) => `${run.p50Ms} / ${run.p99Ms} (load ${run.loadavg1})`);
        notes.push(`@${rate}/s rounds ${each.join(", ")}`);
      }
      return lat && "p50Ms" in lat ? `${lat.p50Ms} / ${lat.p99Ms}` : "-";
    });
    rows.push([
      name,
      String(r.jobsPerSec),
      String(r.ms),
      String(r.enqueuePerSec),
      String(r.loadavg1),
      cell(r.jobsPerPoll),
      ...cpuColumns.map((c) => cell(r.cpuUsPerJob[c])),
      ...latencies,
      notes.filter(Boolean).join("; "),
    ]);
  }
  return rows;
}

/** What was run, and (`withMachine`, for the text table) on what, at what load. */
export function drainHead(report: DrainReport, withMachine = true): string {
  const m = report.machine;
  return (
    `drain: ${report.jobs} jobs, concurrency ${report.concurrency} (taskq: the SDK's default worker; ` +
    `taskq-prefetch: prefetch ${report.prefetch}), median of ${report.runs} interleaved run(s)` +
    (withMachine ? `, ${m.cpus} × ${m.cpuModel}, node ${m.node}, load ${m.loadavg1} at start` : "")
  );
}

/** Each taskq entry's jobs/s over the best peer's, and its Postgres CPU per job over each peer's. */
export function drainFoot(report: DrainReport): string[] {
  return [
    ...Object.entries(report.ratios)
      .filter((e): e is [string, number] => e[0].endsWith("/best-peer") && typeof e[1] === "number")
      .map(([k, v]) => `${k.replace("/best-peer", "")} / ${report.bestPeer} jobs/s: ${v}×`),
    ...Object.entries(report.ratios.postgresUsPerJob).map(([k, v]) => `${k} Postgres µs per job: ${v}×`),
  ];
}

/** The human-readable drain report: one row per peer, then the ratios. */
export function drainTable(report: DrainReport): string {
  const foot = drainFoot(report);
  return `${drainHead(report)}\n\n${textTable(drainRows(report))}${foot.length > 0 ? `\n\n${foot.join("\n")}` : ""}`;
}
