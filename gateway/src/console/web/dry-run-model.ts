import { count, counted } from "./format.js";

/** One replay of AdminService.DryRunLimit's answer, as protobuf JSON (zero values left out). */
interface ReplayJson {
  peakBacklog?: number;
  meanWaitMs?: number;
  maxWaitMs?: number;
  notStartedByEnd?: number;
}

/** AdminService.DryRunLimit's answer as protobuf JSON (camelCase; zero values left out). */
export interface DryRunJson {
  jobs?: number;
  truncated?: boolean;
  maxJobs?: number;
  workers?: number;
  minDelayMs?: number;
  delayed?: number;
  sooner?: number;
  longestExtraWaitMs?: number;
  current?: ReplayJson;
  proposed?: ReplayJson;
}

/** What a limit's dialog shows of a dry run: one sentence, then the two replays side by side. */
export interface DryRunView {
  summary: string;
  /** [what, now, with the change]. */
  rows: [string, string, string][];
  /** Caveats: a cut-short window, the workers assumed. */
  notes: string[];
}

/** Wait times for people: ms below a second, then s, min, h. */
export function wait(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${round1(ms / 1000)} s`;
  if (ms < 3_600_000) return `${round1(ms / 60_000)} min`;
  return `${round1(ms / 3_600_000)} h`;
}

const round1 = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

/** The dry run's answer in words, for the dialog. */
export function dryRunView(r: DryRunJson): DryRunView {
  const jobs = r.jobs ?? 0;
  const delayed = r.delayed ?? 0;
  const threshold = wait(r.minDelayMs ?? 0);
  const summary =
    jobs === 0
      ? "No job of this queue ran in the window: nothing to replay."
      : delayed === 0
        ? `Over the window's ${counted(jobs, "job")}, none would have started ${threshold} or more later.`
        : `${count(delayed)} of ${counted(jobs, "job")} would have started ${threshold} or more later, ` +
          `the longest by ${wait(r.longestExtraWaitMs ?? 0)}.`;
  const side = (f: (s: ReplayJson) => string): [string, string] => [f(r.current ?? {}), f(r.proposed ?? {})];
  const rows: [string, string, string][] = [
    ["Peak backlog", ...side((s) => count(s.peakBacklog ?? 0))],
    ["Mean wait", ...side((s) => wait(s.meanWaitMs ?? 0))],
    ["Longest wait", ...side((s) => wait(s.maxWaitMs ?? 0))],
    ["Not started by the end", ...side((s) => count(s.notStartedByEnd ?? 0))],
  ];
  const notes: string[] = [];
  if ((r.sooner ?? 0) > 0)
    notes.push(`${counted(r.sooner ?? 0, "job")} would have started ${threshold} or more sooner.`);
  if (r.truncated)
    notes.push(
      `The window held more than ${count(r.maxJobs ?? 0)} jobs: only the oldest ${count(jobs)} were replayed.`,
    );
  notes.push(
    r.workers === undefined
      ? "Workers assumed: as many at once as the limits allow."
      : `Workers assumed: at most ${count(r.workers)} jobs at once, the most that ran at once in the window.`,
  );
  return { summary, rows, notes };
}
