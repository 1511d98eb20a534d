import { AdminService } from "@taskq/sdk/proto";
import { UsageError } from "./args.js";
import { type Command, command } from "./command.js";
import { dryRunFlags, isDryRun, runDryRun } from "./dry-run.js";

const rpc = AdminService.method;

const setFlowLimit = command({
  name: "set-flow-limit",
  args: ["<flow-key>"],
  summary: "Meter claims of jobs carrying a flow key, across queues (GCRA), or --off to remove it",
  details: `Example: taskq queue set-flow-limit provider.acme --rate-per-minute 120 --burst 10
With --dry-run, nothing changes: one queue's last hour is replayed under the new limit (claims of the key
from other queues also spend its tokens, so its real delays are at least those shown):
  taskq queue set-flow-limit provider.acme --rate-per-minute 120 --dry-run --queue mail`,
  options: {
    ...dryRunFlags,
    queue: { type: "string", value: "QUEUE", help: "With --dry-run: the queue whose jobs are replayed" },
    "rate-per-minute": { type: "string", value: "N", help: "Claims per minute, 1 to 6,000,000" },
    burst: {
      type: "string",
      value: "N",
      help: "Claims admitted at once from idle, 1 to 100,000 (default 1)",
    },
    off: { type: "boolean", help: "Remove the limit: the key is unlimited again" },
  },
  async run({ args, clients, out }) {
    args.oneOf("rate-per-minute", "off");
    if (args.flag("off") && args.has("burst"))
      throw new UsageError("--burst needs --rate-per-minute, not --off");
    const key = args.arg(0);
    const req = { flowKey: key, ratePerMinute: args.int("rate-per-minute"), burst: args.int("burst") };
    if (isDryRun({ args })) {
      const queue = args.str("queue");
      if (queue === undefined)
        throw new UsageError("--dry-run needs --queue: the queue whose jobs are replayed");
      return runDryRun({ args, clients, out }, { case: "flowLimit", value: req }, queue);
    }
    if (args.has("queue")) throw new UsageError("--queue needs --dry-run");
    const res = await clients.admin.setFlowLimit(req);
    out.respond(rpc.setFlowLimit.output, res, () =>
      out.line(
        res.limit
          ? `flow key ${key}: ${res.limit.ratePerMinute} claims/min, burst ${res.limit.burst}`
          : `flow key ${key}: unlimited`,
      ),
    );
  },
});

const flowLimits = command({
  name: "flow-limits",
  args: [],
  summary: "List the flow-key limits (keys not listed are unlimited)",
  options: {},
  async run({ clients, out }) {
    const res = await clients.admin.listFlowLimits({});
    out.respond(rpc.listFlowLimits.output, res, () =>
      out.table(
        ["FLOW_KEY", "RATE_PER_MINUTE", "BURST"],
        res.limits.map((l) => [l.flowKey, l.ratePerMinute, l.burst]),
      ),
    );
  },
});

/** `taskq queue …` verbs on flow-key limits, which span queues. */
export const flowLimitCommands: readonly Command[] = [setFlowLimit, flowLimits];
