import { AdminService, JobState } from "@taskq/sdk/proto";
import { UsageError } from "./args.js";
import { type Command, command } from "./command.js";
import { type Cell, isoTime } from "./output.js";

const rpc = AdminService.method;
const INT64_MAX = 9_223_372_036_854_775_807n;
const STATES = ["scheduled", "queued", "running", "succeeded", "failed", "cancelled"] as const;

/** `--state NAME` as the wire's JobState; absent is UNSPECIFIED, every state. */
function jobState(raw: string | undefined): JobState {
  if (raw === undefined) return JobState.UNSPECIFIED;
  const name = raw.trim().toLowerCase();
  if (!(STATES as readonly string[]).includes(name))
    throw new UsageError(`--state must be one of ${STATES.join(", ")}, got "${raw}"`);
  return JobState[name.toUpperCase() as keyof typeof JobState];
}

/** `--before-id N`: a job id (int64), undefined when absent. */
function jobId(raw: string | undefined): bigint | undefined {
  if (raw === undefined) return undefined;
  const n = /^\s*\d+\s*$/.test(raw) ? BigInt(raw.trim()) : -1n;
  if (n < 1n || n > INT64_MAX)
    throw new UsageError(`--before-id must be a job id (a whole number from 1), got "${raw}"`);
  return n;
}

const ls = command({
  name: "ls",
  args: ["<queue>"],
  summary: "The queue's jobs, newest first, in every state or one (no payloads: see job get)",
  details: `Shows 50 jobs by default; page with the last id shown:
  taskq job ls mail
  taskq job ls mail --state failed
  taskq job ls mail --state failed --before-id 1234`,
  options: {
    state: { type: "string", value: "STATE", help: `One of ${STATES.join(", ")} (default: every state)` },
    "before-id": { type: "string", value: "ID", help: "Only jobs with an id below ID (the next page)" },
    limit: { type: "string", value: "N", help: "At most N jobs, 1 to 1,000 (default 50)" },
  },
  async run({ args, clients, out }) {
    const state = jobState(args.str("state"));
    const limit = args.int("limit", { min: 1, max: 1000 });
    const res = await clients.admin.listJobs({
      queue: args.arg(0),
      state,
      limit,
      beforeId: jobId(args.str("before-id")),
    });
    out.respond(rpc.listJobs.output, res, () => {
      const every = state === JobState.UNSPECIFIED;
      out.line(
        `${res.total} ${every ? `job${res.total === 1n ? "" : "s"}` : JobState[state].toLowerCase()} in ${args.arg(0)}`,
      );
      out.table(
        ["ID", "STATE", "ATTEMPT", "ENQUEUED", "RUN_AT", "FINISHED", "OUTCOME", "LAST_ERROR"],
        res.jobs.map((j): Cell[] => [
          j.id,
          JobState[j.state]?.toLowerCase(),
          `${j.attempt}/${j.maxAttempts}`,
          isoTime(j.enqueuedAt),
          isoTime(j.runAt),
          isoTime(j.finishedAt),
          j.outcome,
          j.lastError ? `${j.lastError.type}: ${j.lastError.message}` : undefined,
        ]),
      );
      const last = res.jobs.at(-1);
      if (last && res.jobs.length === (limit ?? 50)) {
        const stateFlag = every ? "" : ` --state ${JobState[state].toLowerCase()}`;
        out.line(`next page: taskq job ls ${args.arg(0)}${stateFlag} --before-id ${last.id}`);
      }
    });
  },
});

const events = command({
  name: "events",
  args: ["<id>"],
  summary: "A job's events (breaker transitions it caused), oldest first",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.listJobEvents({ jobId: args.arg(0) });
    out.respond(rpc.listJobEvents.output, res, () =>
      out.table(
        ["ID", "AT", "EVENT", "DATA"],
        res.events.map((e): Cell[] => [
          e.id,
          isoTime(e.createdAt),
          e.eventType,
          JSON.stringify(e.data ?? {}),
        ]),
      ),
    );
  },
});

/** `taskq job ls` and `taskq job events`: the console's job reads on the command line. */
export const jobListCommands: readonly Command[] = [ls, events];
