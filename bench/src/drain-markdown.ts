// The drain report as Markdown for bench/README.md (`--markdown`): with `--latency` the section is about
// enqueue → start, one row per peer and rate; otherwise it is the drain table itself.
import { type DrainReport, drainFoot, drainHead, drainRows, type PeerReport } from "./drain-report.js";
import { markdownTable } from "./scenario.js";

const ok = (r: PeerReport): r is Extract<PeerReport, { runs: unknown }> => "runs" in r;

/** Peer names as the tables show them: taskq-prefetch with its prefetch. */
const label = (report: DrainReport, peer: string) =>
  peer === "taskq-prefetch" ? `taskq-prefetch (${report.prefetch})` : peer;

/** One row per peer and offered rate: medians of the rounds, every round's p50 / p99 and its load. */
function latencyRows(report: DrainReport): string[][] {
  const processes = [
    ...new Set(
      Object.values(report.results).flatMap((r) =>
        ok(r)
          ? Object.values(r.latency ?? {}).flatMap((l) =>
              "cpuUsPerJob" in l ? Object.keys(l.cpuUsPerJob) : [],
            )
          : [],
      ),
    ),
  ];
  const rows: string[][] = [
    [
      "peer",
      "offered jobs/s",
      "p50 ms",
      "p99 ms",
      `CPU µs/job ${processes.join(" / ")}`,
      "drain jobs/s",
      "rounds: p50 / p99 (load)",
    ],
  ];
  for (const [peer, r] of Object.entries(report.results)) {
    if (!ok(r)) {
      rows.push([label(report, peer), "", "", "", "", "", `FAILED: ${"error" in r ? r.error : "?"}`]);
      continue;
    }
    for (const [rate, l] of Object.entries(r.latency ?? {})) {
      if ("error" in l) {
        rows.push([label(report, peer), rate, "-", "-", "", String(r.jobsPerSec), l.error]);
        continue;
      }
      rows.push([
        label(report, peer),
        rate,
        String(l.p50Ms),
        String(l.p99Ms),
        processes.map((p) => l.cpuUsPerJob[p] ?? "–").join(" / "),
        String(r.jobsPerSec),
        l.runs.map((run) => `${run.p50Ms} / ${run.p99Ms} (${run.loadavg1})`).join(", "),
      ]);
    }
  }
  return rows;
}

export function drainMarkdown(report: DrainReport): string {
  const hasLatency = Object.values(report.results).some((r) => ok(r) && r.latency !== undefined);
  if (hasLatency) {
    return [
      `${drainHead(report, false)}. Enqueue → handler start at a fixed offered rate, ${report.runs} interleaved ` +
        "round(s) after the drains, each figure the median of the rounds; CPU per job over a round, warm-up included.",
      markdownTable(latencyRows(report)),
    ].join("\n\n");
  }
  const foot = drainFoot(report);
  return [
    `${drainHead(report, false)}.`,
    markdownTable(drainRows(report)),
    ...(foot.length > 0 ? [foot.join("; ")] : []),
  ].join("\n\n");
}
