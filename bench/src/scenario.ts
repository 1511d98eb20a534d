import type { BenchConfig } from "./config.js";

/** Options every scenario receives from the command line (each uses what applies to it). */
export interface ScenarioOptions {
  /** Jobs per timed run (`--jobs`, default 20,000, or the scenario's `defaultJobs`). */
  readonly jobs: number;
  /** Whether `--jobs` was given (drain `--grid` sizes each cell's backlog otherwise). */
  readonly jobsGiven: boolean;
  /** Jobs in flight per worker (`--concurrency`, default 50, or the scenario's `defaultConcurrency`). */
  readonly concurrency: number;
  /** Jobs drained before the timed run so pools and JIT are warm (`--warmup`, default 1,000; 0 skips). */
  readonly warmup: number;
  /** How long each job's handler takes, ms (`--job-ms`, default 0: a no-op, or the scenario's `defaultJobMs`). */
  readonly jobMs: number;
  /**
   * Workers' prefetch (`--prefetch`): drain's `taskq-prefetch` (default 500), fairness's comparison
   * worker (default 0), every gates or breaker worker (default 0).
   */
  readonly prefetch: number | undefined;
  /** soak: jobs offered per second (`--rate`; unset: the scenario's default). */
  readonly rate?: number;
  /** Timed runs per peer; the median is reported (`--runs`, default 1). */
  readonly runs: number;
  /** Run the enqueue→start latency sub-measure where an adapter supports it (`--latency`). */
  readonly latency: boolean;
  /** Peer names to run (`--only a,b`); null runs all. */
  readonly only: readonly string[] | null;
  /** Length of each measured window, seconds (`--seconds`; unset: the scenario default — gates 10, breaker 30). */
  readonly seconds?: number;
  /** Gateway child processes (`--gateways`; the gates and breaker scenarios, default 3). */
  readonly gateways?: number;
  /** parked: Claim streams held open (`--streams`; unset: 10,000). */
  readonly streams?: number;
  /** parked: HTTP/2 connections they share (`--connections`; unset: 20). */
  readonly connections?: number;
  /** parked: how jobs are enqueued (`--enqueue rpc|sql`; unset: rpc). */
  readonly enqueueVia?: "rpc" | "sql";
  readonly config: BenchConfig;
  /** Progress for humans, on stderr. */
  readonly log: (message: string) => void;
}

/** A named benchmark. `run` returns a JSON-serialisable report; `table` renders it for humans. */
export interface Scenario<Report extends object> {
  readonly name: string;
  /** One line for `--help`. */
  readonly summary: string;
  /** `--jobs` when it is not given (default 20,000). */
  readonly defaultJobs?: number;
  /** `--concurrency` when it is not given (default 50). */
  readonly defaultConcurrency?: number;
  /** `--job-ms` when it is not given (default 0). */
  readonly defaultJobMs?: number;
  run(options: ScenarioOptions): Promise<Report>;
  table(report: Report): string;
  /**
   * The section of bench/README.md that `--markdown` writes for these options (between
   * `<!-- bench:KEY:start -->` and `<!-- bench:KEY:end -->`); default the scenario's name.
   */
  readmeKey?(options: ScenarioOptions): string;
  /** The report as Markdown for that section; default the text table in a fenced block. */
  markdown?(report: Report): string;
  /** True when the report records a failure, so the process exits non-zero. */
  failed(report: Report): boolean;
}

/** Renders rows as a left-aligned text table; the first row is the header. */
export function textTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/**
 * Renders rows as a Markdown table, its columns padded as the repository's formatter (Biome) writes
 * them, so that a generated README passes `biome check`; the first row is the header, and a `|` in a
 * cell is escaped.
 */
export function markdownTable(rows: readonly (readonly string[])[]): string {
  const escaped = rows.map((row) => row.map((cell) => cell.replaceAll("|", "\\|")));
  const [head, ...body] = escaped;
  if (!head) return "";
  const widths = head.map((_, i) => Math.max(3, ...escaped.map((row) => (row[i] ?? "").length)));
  const line = (row: readonly string[]) =>
    `| ${widths.map((w, i) => (row[i] ?? "").padEnd(w)).join(" | ")} |`;
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}
