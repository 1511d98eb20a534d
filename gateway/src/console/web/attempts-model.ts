import { age } from "./format.js";
import { errorLine, type JobJson } from "./jobs-model.js";
import { dateTime } from "./time.js";

/** Protobuf JSON of a JobAttempt (GetJobResponse.attempts). */
export interface AttemptJson {
  attempt?: number;
  workerId?: string;
  gateway?: string;
  claimedAt?: string;
  finishedAt?: string;
  outcome?: string;
  error?: JobJson["lastError"];
  /** Protobuf JSON of a Duration: "0.250s". */
  duration?: string;
}

/** The columns of the job page's Attempts table, in order. */
export const ATTEMPT_COLUMNS = ["Attempt", "Worker", "Claimed", "Finished", "Duration", "Outcome", "Error"];

/** One attempt as the table's cells, in ATTEMPT_COLUMNS' order. */
export function attemptCells(a: AttemptJson): string[] {
  return [
    String(a.attempt ?? 0),
    a.workerId || "—",
    dateTime(a.claimedAt) || "—",
    dateTime(a.finishedAt) || (a.outcome === "running" ? "running" : "—"),
    a.duration === undefined ? "—" : runTime(Number.parseFloat(a.duration) * 1000),
    (a.outcome ?? "").replaceAll("_", " "),
    errorLine(a.error),
  ];
}

/** What the table says when there is no attempt: never claimed, or none recorded. */
export function noAttempts(job: JobJson): string {
  return job.attempt
    ? "No attempts recorded for this job."
    : "No attempts yet: no worker has claimed this job.";
}

/** How long an attempt ran: 250 → "250 ms", 1500 → "1.5 s", 600000 → "10 min". */
export function runTime(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${Math.round(ms / 100) / 10} s`;
  return age(ms / 1000);
}
