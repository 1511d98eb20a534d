import type { Db } from "../store/db.js";
import { loadQueries } from "../store/queries.js";
import type { ReplayInput, ReplayJob } from "./simulate.js";

const q = loadQueries("dry-run.sql", ["DryRunNow", "DryRunHistory"] as const);

/** Most jobs a dry run reads: a window holding more is cut short, and the report says so. */
export const MAX_REPLAY_JOBS = 200_000;

/** A queue's recent jobs as a replay takes them. */
export interface History {
  /** The window replayed, ms since the epoch: `toMs` is earlier than asked when `truncated`. */
  fromMs: number;
  toMs: number;
  /** More jobs were ready in the window than the row bound: only those ready before `toMs` count. */
  truncated: boolean;
  input: ReplayInput;
  /** Most jobs of the queue that ran at once in the window (what the workers managed). */
  peakRunning: number;
}

interface Row {
  id: string;
  priority: number;
  flow_key: string | null;
  ready_ms: number;
  started_ms: number | null;
  finished_ms: number | null;
  failed: boolean;
}

/** Postgres's time now, ms since the epoch: a dry run's window ends there. */
export async function dbNow(db: Db): Promise<number> {
  const [row] = await db.query<{ now_ms: number }>(q.DryRunNow);
  if (!row) throw new Error("now() returned nothing");
  return row.now_ms;
}

/**
 * Reads the jobs of `queue` a replay of [fromMs, toMs) needs (at most `maxJobs`, oldest ready first):
 * those ready in it, those waiting at its start (as ready at `fromMs`), and those running at its start
 * (as places held until they finished). A job's run time is its last attempt's, started to finished;
 * one still running counts as running until `toMs`, and one still queued as running for the median.
 */
export async function readHistory(
  db: Db,
  p: { queue: string; fromMs: number; toMs: number; maxJobs?: number },
): Promise<History> {
  const max = p.maxJobs ?? MAX_REPLAY_JOBS;
  const rows = await db.query<Row>(q.DryRunHistory, [
    p.queue,
    new Date(p.fromMs).toISOString(),
    new Date(p.toMs).toISOString(),
    max + 1,
  ]);
  let toMs = p.toMs;
  const truncated = rows.length > max;
  if (truncated) {
    // Every job ready before the first one left out was read.
    toMs = (rows[max] as Row).ready_ms;
    rows.length = max;
    while (rows.length > 0 && (rows[rows.length - 1] as Row).ready_ms >= toMs) rows.pop();
  }
  return fromRows(rows, p.fromMs, toMs, truncated);
}

function fromRows(rows: readonly Row[], fromMs: number, toMs: number, truncated: boolean): History {
  const runs = rows
    .filter((r) => r.started_ms !== null && r.finished_ms !== null)
    .map((r) => (r.finished_ms as number) - (r.started_ms as number))
    .sort((a, b) => a - b);
  const median = runs.length > 0 ? (runs[runs.length >> 1] as number) : 0;
  const jobs: ReplayJob[] = [];
  const runningUntilMs: number[] = [];
  const spans: [number, number][] = [];
  for (const r of rows) {
    const end = r.finished_ms ?? toMs;
    if (r.started_ms !== null) spans.push([Math.max(r.started_ms, fromMs), Math.min(end, toMs)]);
    if (r.started_ms !== null && r.started_ms < fromMs) {
      runningUntilMs.push(end);
      continue;
    }
    jobs.push({
      readyMs: Math.max(r.ready_ms, fromMs),
      runMs: r.started_ms === null ? median : Math.max(0, end - r.started_ms),
      priority: r.priority,
      flowKey: r.flow_key,
      failed: r.failed,
    });
  }
  // Rows come oldest ready first; clamping to the window's start keeps that order.
  return { fromMs, toMs, truncated, input: { jobs, runningUntilMs }, peakRunning: peakOf(spans) };
}

/** The most spans [start, end) that overlap at one moment. */
function peakOf(spans: readonly [number, number][]): number {
  const edges: [number, number][] = [];
  for (const [s, e] of spans) if (e > s) edges.push([s, 1], [e, -1]);
  // An end before a start at the same ms: a job that finished as the next started held no extra place.
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = 0;
  for (const [, d] of edges) {
    now += d;
    if (now > peak) peak = now;
  }
  return peak;
}
