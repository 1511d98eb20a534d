import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { JSON_CONTENT_TYPE, TEXT_CONTENT_TYPE } from "@taskq/sdk";
import { AdminService, type JobAttempt, type JobInfo, JobState, ProducerService } from "@taskq/sdk/proto";
import { type Command, command } from "./command.js";
import { type Cell, isoTime, type Output } from "./output.js";

const rpc = ProducerService.method;
const utf8 = new TextEncoder();

/** `taskq enqueue <queue>`: prints the new job's id. */
export const enqueue = command({
  name: "enqueue",
  args: ["<queue>"],
  summary: "Enqueue one job and print its id",
  details: `--payload is sent as application/json when it parses as JSON, else as UTF-8 text.
  taskq enqueue mail --payload '{"to": "a@example.com"}' --priority 5 --flow-key provider.acme`,
  options: {
    payload: { type: "string", value: "JSON|TEXT", help: "Job payload (default empty)" },
    "content-type": { type: "string", value: "MIME", help: "Override the payload's content type" },
    priority: { type: "string", value: "N", help: "Higher runs first, -32768 to 32767 (default 0)" },
    "delay-ms": { type: "string", value: "N", help: "Run no earlier than N ms from now" },
    "flow-key": { type: "string", value: "KEY", help: "Key metered by flow limits (at most 255 bytes)" },
    "max-attempts": { type: "string", value: "N", help: "1 to 1000 (default: the gateway's, 25)" },
    "ttl-seconds": {
      type: "string",
      value: "N",
      help: "Cancel if not started within N s (default: the queue's)",
    },
    "idempotency-key": {
      type: "string",
      value: "KEY",
      help: "A repeat with the same key returns the first job",
    },
  },
  async run({ args, clients, out }) {
    const payload = args.str("payload");
    const delayMs = args.int("delay-ms", { max: Number.MAX_SAFE_INTEGER });
    const res = await clients.producer.enqueue({
      job: {
        queue: args.arg(0),
        payload: payload === undefined ? new Uint8Array(0) : utf8.encode(payload),
        contentType: args.str("content-type") ?? (payload === undefined ? "" : contentTypeOf(payload)),
        priority: args.int("priority", { min: -2_147_483_648, max: 2_147_483_647 }),
        flowKey: args.str("flow-key"),
        schedule:
          delayMs === undefined ? { case: undefined } : { case: "delay", value: durationFromMs(delayMs) },
        ttlSeconds: args.int("ttl-seconds"),
        maxAttempts: args.int("max-attempts"),
        idempotencyKey: args.str("idempotency-key"),
      },
    });
    out.respond(rpc.enqueue.output, res, () =>
      out.line(res.duplicate ? `${res.jobId} (duplicate: existing job returned)` : res.jobId),
    );
  },
});

/** application/json when the payload parses as JSON, else UTF-8 text. */
export function contentTypeOf(payload: string): string {
  try {
    JSON.parse(payload);
    return JSON_CONTENT_TYPE;
  } catch {
    return TEXT_CONTENT_TYPE;
  }
}

const get = command({
  name: "get",
  args: ["<id>"],
  summary: "Show everything known about a job, and its attempts",
  details: `Each attempt that did not succeed is listed with its worker, times and error, oldest first,
then the one running or succeeded.`,
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.producer.getJob({ jobId: args.arg(0) });
    out.respond(rpc.getJob.output, res, () => {
      printJob(out, res.job);
      printAttempts(out, res.job, res.attempts);
    });
  },
});

const cancel = command({
  name: "cancel",
  args: ["<id>"],
  summary: "Cancel a waiting job at once, or ask a running one to stop at its next heartbeat",
  options: { reason: { type: "string", value: "TEXT", help: "Why, recorded with the job" } },
  async run({ args, clients, out }) {
    const res = await clients.producer.cancelJob({ jobId: args.arg(0), reason: args.str("reason") });
    out.respond(rpc.cancelJob.output, res, () => printJob(out, res.job));
  },
});

const retry = command({
  name: "retry",
  args: ["<id>"],
  summary: "Retry a failed job now, its attempts granted again (operator)",
  details: `The job goes back to its queue, ready at once, as \`taskq queue redrive\` puts a queue's failed
jobs back: its attempt keeps counting and it may run max-attempts more times. A job that is not failed
is refused, saying its state. Audited on the job's queue as job.retry.
  taskq job retry 4711`,
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.retryJob({ jobId: args.arg(0) });
    out.respond(AdminService.method.retryJob.output, res, () => printJob(out, res.job));
  },
});

/** `taskq job …` verbs. */
export const jobCommands: readonly Command[] = [get, cancel, retry];

const stateName = (s: JobState): string => (JobState[s] ?? String(s)).toLowerCase();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The payload as text when it is UTF-8, else its size. */
function payloadText(bytes: Uint8Array): string | undefined {
  if (bytes.length === 0) return undefined;
  try {
    const text = decoder.decode(bytes);
    return text.length > 200 ? `${text.slice(0, 200)}… (${bytes.length} bytes)` : text;
  } catch {
    return `<${bytes.length} bytes of binary>`;
  }
}

function printJob(out: Output, j: JobInfo | undefined): void {
  if (!j) return;
  out.fields([
    ["id", j.id],
    ["queue", j.queue],
    ["state", stateName(j.state)],
    ["outcome", j.outcome],
    ["attempt", `${j.attempt} of ${j.maxAttempts}`],
    ["priority", j.priority],
    ["flow_key", j.flowKey],
    ["content_type", j.contentType],
    ["payload", payloadText(j.payload)],
    ["enqueued_at", isoTime(j.enqueuedAt)],
    ["run_at", isoTime(j.runAt)],
    ["started_at", isoTime(j.startedAt)],
    ["finished_at", isoTime(j.finishedAt)],
    ["lease_deadline", isoTime(j.leaseDeadline)],
    ["expires_at", isoTime(j.expiresAt)],
    ["cancel_requested", j.cancelRequested],
    ["worker_id", j.workerId],
    ["last_error", j.lastError ? `${j.lastError.type}: ${j.lastError.message}` : undefined],
  ]);
}

/** The attempts as a table, or why there are none. */
function printAttempts(out: Output, j: JobInfo | undefined, attempts: readonly JobAttempt[]): void {
  out.line("");
  if (attempts.length === 0) {
    out.line(j?.attempt ? "attempts: none recorded" : "attempts: none yet (never claimed)");
    return;
  }
  out.line("attempts:");
  out.table(
    ["ATTEMPT", "WORKER", "CLAIMED", "FINISHED", "DURATION", "OUTCOME", "ERROR"],
    attempts.map((a): Cell[] => [
      a.attempt,
      a.workerId,
      isoTime(a.claimedAt),
      isoTime(a.finishedAt),
      a.duration ? `${Number(a.duration.seconds) * 1000 + Math.round(a.duration.nanos / 1e6)} ms` : undefined,
      a.outcome,
      a.error
        ? `${a.error.type}: ${a.error.message}${a.error.retryable ? "" : " (not retryable)"}`
        : undefined,
    ]),
  );
}
