import type { MachineInfo } from "./infra.js";
import { markdownTable, textTable } from "./scenario.js";

/** One timed run of one variant. */
export interface FairnessRun {
  /** Milliseconds from the first enqueue call's return to the gateway's acceptance of the last settle. */
  makespanMs: number;
  /** `makespanMs / idealMs`: 1 is every slot busy from the first enqueue to the last settle. */
  overIdeal: number;
  /** Jobs each worker ran (handler starts), in the order the workers were made. */
  perWorker: number[];
  /** 1-minute load average when this run started (before its enqueue). */
  loadavg1: number;
}

/** One variant's line: its median run by makespan and every run, or why it has none. */
export type FairnessResult = (FairnessRun & { runs: FairnessRun[] }) | { error: string };

export interface FairnessReport {
  scenario: "fairness";
  workers: number;
  slotsPerWorker: number;
  jobs: number;
  jobMs: number;
  /** `jobs × jobMs / (workers × slotsPerWorker)`: the makespan with every slot busy throughout. */
  idealMs: number;
  runs: number;
  /** Whether each variant ran once untimed first (`--warmup 0` skips it). */
  warmup: boolean;
  machine: MachineInfo;
  /** By variant: `default` (no prefetch option, the SDK's default), `prefetch-N` (prefetch N). */
  results: Record<string, FairnessResult>;
}

/** The median run by makespan (the lower middle one for an even count). */
export function medianByMakespan(runs: readonly FairnessRun[]): FairnessRun {
  const sorted = [...runs].sort((a, b) => a.makespanMs - b.makespanMs);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  if (!median) throw new Error("no runs");
  return median;
}

const prefetchOf = (variant: string) =>
  variant === "default" ? "none given (SDK default)" : variant.replace("prefetch-", "");

function fairnessRows(report: FairnessReport): string[][] {
  const rows = [
    ["worker", "prefetch option", "makespan ms", "/ ideal", "jobs per worker", "runs: makespan ms (load)"],
  ];
  for (const [variant, r] of Object.entries(report.results)) {
    if ("error" in r) {
      rows.push([variant, prefetchOf(variant), "-", "-", "-", `FAILED: ${r.error}`]);
      continue;
    }
    rows.push([
      variant,
      prefetchOf(variant),
      String(r.makespanMs),
      r.overIdeal.toFixed(2),
      r.perWorker.join(" / "),
      r.runs.map((run) => `${run.makespanMs} (${run.loadavg1})`).join(", "),
    ]);
  }
  return rows;
}

/** What was run; the text table adds the machine, which a Markdown section's stamp already says. */
function fairnessHead(report: FairnessReport): string {
  return (
    `fairness: ${report.workers} workers × ${report.slotsPerWorker} slots on one queue, ${report.jobs} jobs of ` +
    `${report.jobMs} ms enqueued at once; ideal ${report.idealMs} ms (jobs × ms / slots); makespan from the ` +
    `first enqueue's return to the last settle, median of ${report.runs} interleaved run(s)`
  );
}

export function fairnessTable(report: FairnessReport): string {
  const m = report.machine;
  const machine = `${m.cpus} × ${m.cpuModel}, node ${m.node}, load ${m.loadavg1} at start`;
  return `${fairnessHead(report)}; ${machine}\n\n${textTable(fairnessRows(report))}`;
}

export const fairnessMarkdown = (report: FairnessReport): string =>
  `${fairnessHead(report)}.\n\n${markdownTable(fairnessRows(report))}`;
