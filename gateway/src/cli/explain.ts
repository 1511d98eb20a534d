import { AdminService, type Explanation, JobState, ThrottleReason } from "@taskq/sdk/proto";
import { type Command, command } from "./command.js";
import { type Cell, isoTime, type Output } from "./output.js";

const rpc = AdminService.method;

const explainJob = command({
  name: "explain",
  args: ["<id>"],
  summary: "Why a job is not running yet, gate by gate, with an estimated start",
  details: `Each thing that holds the job back or would, in the order claims apply them, with its figures
and when it next lets a job through; then one line: the estimated start (or why there is none) and
the first blocking reason. For a running or finished job: its attempts, lease and last error.
Reads only: it takes no throttle slot or token and writes nothing.
  taskq job explain 1234
  taskq job explain 1234 --json`,
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.explainJob({ jobId: args.arg(0) });
    out.respond(rpc.explainJob.output, res, () => printExplanation(out, res.explanation));
  },
});

const explainQueue = command({
  name: "explain",
  args: ["<queue>"],
  summary: "Why is this queue stuck? `job explain` for its next job, or what would hold one back",
  details: `The next job is the one a claim would hand out next (else the first scheduled one).
  taskq queue explain mail`,
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.explainQueue({ queue: args.arg(0) });
    out.respond(rpc.explainQueue.output, res, () => printExplanation(out, res.explanation));
  },
});

/** `taskq job explain`. */
export const jobExplainCommands: readonly Command[] = [explainJob];
/** `taskq queue explain`. */
export const queueExplainCommands: readonly Command[] = [explainQueue];

/** The explanation for people: the job, a table of its reasons in order, the summary line. */
export function printExplanation(out: Output, e: Explanation | undefined): void {
  if (!e) return;
  out.fields([
    ["job", e.jobId],
    ["queue", e.queue],
    ["state", e.jobId ? (JobState[e.state] ?? String(e.state)).toLowerCase() : undefined],
    ["attempt", e.jobId ? `${e.attempt} of ${e.maxAttempts}` : undefined],
    ["worker_id", e.workerId],
    ["lease_deadline", isoTime(e.leaseDeadline)],
    ["finished_at", isoTime(e.finishedAt)],
    ["outcome", e.outcome],
    ["last_error", e.lastError ? `${e.lastError.type}: ${e.lastError.message}` : undefined],
    ["estimated_start", isoTime(e.estimatedStart)],
  ]);
  if (e.reasons.length > 0) {
    out.line("");
    out.table(
      ["GATE", "VERDICT", "BLOCKING", "NEXT", "WHY"],
      e.reasons.map((r): Cell[] => [
        r.gate,
        r.verdict === ThrottleReason.UNSPECIFIED ? undefined : ThrottleReason[r.verdict],
        r.blocking,
        isoTime(r.nextAt),
        r.summary,
      ]),
    );
  }
  out.line("");
  out.line(e.summary);
}
