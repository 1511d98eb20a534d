import { AdminService } from "@taskq/sdk/proto";
import { type OptionSpec, UsageError } from "./args.js";
import { type Command, command } from "./command.js";
import { dryRunFlags, isDryRun, runDryRun } from "./dry-run.js";
import { type Cell, isoTime } from "./output.js";
import { printQueue } from "./queue-view.js";

const rpc = AdminService.method;
const N = (help: string): OptionSpec => ({ type: "string", value: "N", help });

const setAdaptive = command({
  name: "set-adaptive",
  args: ["<queue>"],
  summary: "Let max_running find its own level between --min and --max from the queue's settles, or --off",
  details: `The limit starts at --min and grows while the average run time of the queue's jobs stays more
than 5% under --target-latency-ms and few fail, rests within those 5%, and backs off when they slow down
past the target or fail (see docs/flow-control.md):
  taskq queue set-adaptive mail --min 2 --max 200 --target-latency-ms 500
--off restores the max_running set before (set-concurrency while it is on changes that value).
With --dry-run, nothing changes: the queue's last hour is replayed with the limit starting at --min and
moved by the run times and failures its jobs had:
  taskq queue set-adaptive mail --min 2 --max 200 --target-latency-ms 500 --dry-run`,
  options: {
    min: N("The lowest limit, 1 to 1,000,000 (where it starts)"),
    max: N("The highest limit, --min to 1,000,000"),
    "target-latency-ms": N("Average run time to keep under, 1 to 3,600,000 ms"),
    off: { type: "boolean", help: "Turn the adaptive limit off (the fixed max_running comes back)" },
    ...dryRunFlags,
  },
  async run({ args, clients, out }) {
    args.oneOf("min", "off");
    if (args.has("off")) {
      const given = ["max", "target-latency-ms"].filter((o) => args.has(o as "max"));
      if (given.length > 0) throw new UsageError(`--off takes no other flags (got --${given.join(", --")})`);
    }
    const req = {
      queue: args.arg(0),
      min: args.int("min", { min: 1, max: 1_000_000, off: "turns the adaptive limit off" }),
      max: args.int("max"),
      targetLatencyMs: args.int("target-latency-ms"),
    };
    if (isDryRun({ args })) return runDryRun({ args, clients, out }, { case: "adaptive", value: req });
    const res = await clients.admin.setAdaptiveConcurrency(req);
    out.respond(rpc.setAdaptiveConcurrency.output, res, () => printQueue(out, res.queue));
  },
});

const adaptiveHistory = command({
  name: "adaptive-history",
  args: ["<queue>"],
  summary: "The adaptive limit's changes, newest first, each with why",
  options: { limit: N("At most N changes, 1 to 1,000 (default 100)") },
  async run({ args, clients, out }) {
    const res = await clients.admin.listAdaptiveChanges({
      queue: args.arg(0),
      limit: args.int("limit", { min: 1, max: 1000 }),
    });
    out.respond(rpc.listAdaptiveChanges.output, res, () =>
      out.table(
        ["AT", "FROM", "TO", "REASON"],
        res.changes.map((c): Cell[] => [isoTime(c.at), c.limitBefore, c.limitAfter, c.reason]),
      ),
    );
  },
});

/** `taskq queue set-adaptive` and `taskq queue adaptive-history`. */
export const queueAdaptiveCommands: readonly Command[] = [setAdaptive, adaptiveHistory];
