import { AdminService } from "@taskq/sdk/proto";
import { type Command, command } from "./command.js";
import { type Cell, isoTime } from "./output.js";

const rpc = AdminService.method;

const activity = command({
  name: "activity",
  args: ["<queue>"],
  summary: "Per minute: claims, jobs settled by outcome, run time, throttled verdicts (fleet-wide)",
  details: `Oldest minute first; the last one is still filling. Claims count each job's latest attempt.
  taskq queue activity mail --minutes 30`,
  options: { minutes: { type: "string", value: "N", help: "The last N minutes, 1 to 60 (default 15)" } },
  async run({ args, clients, out }) {
    const res = await clients.admin.queueActivity({ queue: args.arg(0), minutes: args.int("minutes") });
    out.respond(rpc.queueActivity.output, res, () =>
      out.table(
        ["MINUTE", "CLAIMED", "SUCCEEDED", "FAILED", "CANCELLED", "AVG_RUN_MS", "MAX_RUN_MS", "THROTTLED"],
        res.minutes.map((m): Cell[] => [
          isoTime(m.minute),
          m.claimed,
          m.succeeded,
          m.failed,
          m.cancelled,
          m.avgRunMs,
          m.maxRunMs,
          Object.entries(m.throttled)
            .map(([reason, n]) => `${reason} ${n}`)
            .join(", "),
        ]),
      ),
    );
  },
});

const breakerEvents = command({
  name: "breaker-events",
  args: ["<queue>"],
  summary: "The breaker's transitions, newest first: automatic (with the job) and by hand (with who)",
  options: { limit: { type: "string", value: "N", help: "At most N events, 1 to 200 (default 20)" } },
  async run({ args, clients, out }) {
    const res = await clients.admin.listBreakerEvents({
      queue: args.arg(0),
      limit: args.int("limit", { min: 1, max: 200 }),
    });
    out.respond(rpc.listBreakerEvents.output, res, () =>
      out.table(
        ["AT", "EVENT", "JOB", "ACTOR", "DATA"],
        res.events.map((e): Cell[] => [
          isoTime(e.createdAt),
          e.eventType,
          e.jobId,
          e.actor,
          Object.keys(e.data ?? {}).length ? JSON.stringify(e.data) : undefined,
        ]),
      ),
    );
  },
});

/** `taskq queue activity` and `taskq queue breaker-events`: the Queue page's reads on the command line. */
export const queueActivityCommands: readonly Command[] = [activity, breakerEvents];
