// `bench drain --grid`: the drain at concurrency 1, 10, 50 and 200 in one run, each cell a whole drain
// scenario (its own databases, warm-up and interleaved runs), with a backlog sized to the concurrency:
// at concurrency 1 every job costs a whole poll, so the fixed cost of one shows; at 200 it is shared.
// Each cell runs in a process of its own, as `bench drain` alone would: a peer's client left behind by
// one cell (a pool whose connection the database drop ends) cannot take the next cell down with it.
import { spawn } from "node:child_process";
import { drainScenario } from "./drain.js";
import type { DrainReport, PeerReport } from "./drain-report.js";
import { markdownTable, type Scenario, type ScenarioOptions, textTable } from "./scenario.js";

/** Concurrency → jobs per timed run (`--jobs` replaces them all). */
const CELLS: readonly (readonly [number, number])[] = [
  [1, 3_000],
  [10, 10_000],
  [50, 20_000],
  [200, 20_000],
];

/** The peers a grid runs without `--only`: taskq beside graphile-worker without and with its local queue, and BullMQ. */
const GRID_PEERS = ["taskq", "taskq-prefetch", "graphile-worker", "graphile-worker-localQueue", "bullmq"];

export interface DrainGridReport {
  scenario: "drain-grid";
  cells: DrainReport[];
}

/**
 * The grid's peers at a concurrency: graphile-worker's default mode opens a connection per slot, more at
 * 200 than this machine's Postgres allows (100), so it sits that cell out.
 */
const gridPeers = (concurrency: number) =>
  GRID_PEERS.filter((p) => p !== "graphile-worker" || concurrency <= 50);

/** One cell: `bench drain` at this concurrency in a child process, its progress relayed, its report read. */
async function drainCell(o: ScenarioOptions, concurrency: number, jobs: number): Promise<DrainReport> {
  const args = [
    ...process.execArgv,
    process.argv[1] ?? "",
    "drain",
    "--json",
    ...["--concurrency", String(concurrency), "--jobs", String(jobs)],
    ...["--runs", String(o.runs), "--warmup", String(o.warmup), "--job-ms", String(o.jobMs)],
    ...["--only", (o.only ?? gridPeers(concurrency)).join(",")],
    ...(o.prefetch === undefined ? [] : ["--prefetch", String(o.prefetch)]),
    ...(o.latency ? ["--latency"] : []),
  ];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  await new Promise((resolve) => child.once("close", resolve));
  try {
    return JSON.parse(out) as DrainReport;
  } catch {
    throw new Error(`drain at concurrency ${concurrency} printed no report (exit ${child.exitCode})`);
  }
}

const ok = (r: PeerReport): r is Extract<PeerReport, { runs: unknown }> => "runs" in r;

/** The grid as rows: a header, then one row per cell and peer, its jobs/s also over the cell's best peer's. */
function gridRows(report: DrainGridReport): string[][] {
  const processes = [
    ...new Set(
      report.cells.flatMap((c) =>
        Object.values(c.results).flatMap((r) => (ok(r) ? Object.keys(r.cpuUsPerJob) : [])),
      ),
    ),
  ];
  const rows = report.cells.flatMap((c) =>
    Object.entries(c.results).map(([peer, r]) => {
      const name = peer === "taskq-prefetch" ? `taskq-prefetch (${c.prefetch})` : peer;
      if (!ok(r)) return [String(c.concurrency), name, `FAILED: ${"error" in r ? r.error : "?"}`];
      const best = c.bestPeer ? c.results[c.bestPeer] : undefined;
      const ratio = best && ok(best) ? (r.jobsPerSec / best.jobsPerSec).toFixed(2) : "";
      return [
        String(c.concurrency),
        name,
        r.jobsPerSec.toLocaleString("en-US"),
        ratio,
        processes.map((p) => r.cpuUsPerJob[p] ?? "–").join(" / "),
        r.jobsPerPoll === undefined ? "" : String(r.jobsPerPoll),
        String(Math.max(...r.runs.map((run) => run.loadavg1))),
      ];
    }),
  );
  const header = [
    "concurrency",
    "peer",
    "jobs/s",
    "/ best peer",
    `CPU µs/job ${processes.join(" / ")}`,
    "jobs/poll",
    "load (max)",
  ];
  return [header, ...rows];
}

function gridHead(report: DrainGridReport): string {
  const first = report.cells[0];
  const runs = first ? `median of ${first.runs} interleaved run(s) per cell` : "no cells";
  return (
    `drain grid, ${runs}; taskq is the SDK's default worker (no prefetch option), taskq-prefetch (N) ` +
    "a worker given prefetch N; / best peer is jobs/s over the cell's fastest non-taskq peer; " +
    "CPU per poll is CPU per job times jobs/poll (taskq counts its polls)"
  );
}

export const drainGridScenario: Scenario<DrainGridReport> = {
  name: "drain",
  summary: drainScenario.summary,
  async run(options) {
    const cells: DrainReport[] = [];
    for (const [concurrency, jobs] of CELLS) {
      options.log(`grid: concurrency ${concurrency}`);
      cells.push(await drainCell(options, concurrency, options.jobsGiven ? options.jobs : jobs));
    }
    return { scenario: "drain-grid", cells };
  },
  failed: (report) => report.cells.some((c) => drainScenario.failed(c)),
  table: (report) => `${gridHead(report)}\n\n${textTable(gridRows(report))}`,
  readmeKey: () => "drain-grid",
  markdown: (report) => `${gridHead(report)}.\n\n${markdownTable(gridRows(report))}`,
};
