import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { AdminService } from "@taskq/sdk/proto";
import { type OptionSpec, UsageError } from "./args.js";
import { type Command, type Context, command } from "./command.js";
import { dryRunFlags, isDryRun, runDryRun } from "./dry-run.js";
import { printQueue, printQueueTable } from "./queue-view.js";

const rpc = AdminService.method;
const N = (help: string): OptionSpec => ({ type: "string", value: "N", help });

/** Typed `queue ensure` flags and the profile key each sets. */
const profileFlags = {
  "max-running": ["max_running", N("Fleet-wide cap on running jobs (1 to 1,000,000)")],
  "claim-rate-per-minute": ["claim_rate_per_minute", N("Claims per minute, queue-wide (GCRA)")],
  "claim-burst": ["claim_burst", N("Claims admitted at once from idle (needs a claim rate)")],
  "ramp-seconds": ["ramp_seconds", N("Slow-start window after a resume, seconds")],
  "priority-aging-seconds": ["priority_aging_seconds", N("+1 effective priority per N seconds waited")],
  "default-ttl-seconds": ["default_ttl_seconds", N("Cancel jobs not started within N seconds")],
  "notify-mode": [
    "notify_mode",
    { type: "string", value: "MODE", help: "always (default) or on_idle_transition" },
  ],
} as const satisfies Record<string, readonly [string, OptionSpec]>;

type ProfileFlag = keyof typeof profileFlags;

/**
 * `--create` on the verbs that set something up: a queue never seen (no jobs, no settings) is refused
 * as not found, so a typo makes no queue; with it the queue is created first, as `queue ensure` does.
 */
const createFlag = {
  create: { type: "boolean", help: "Create the queue first if it was never seen (as queue ensure does)" },
} as const satisfies Record<string, OptionSpec>;

async function createIfAsked({ args, clients }: Context<"create">): Promise<void> {
  if (args.flag("create")) await clients.admin.ensureQueue({ queue: args.arg(0) });
}

/** A dry run of a verb with --create: refused, since creating the queue would change something. */
function dryRunWithoutCreate(ctx: Context<"create" | keyof typeof dryRunFlags>): boolean {
  if (!isDryRun(ctx)) return false;
  if (ctx.args.flag("create")) throw new UsageError("--create changes something: not with --dry-run");
  return true;
}

const ls = command({
  name: "ls",
  args: [],
  summary: "List every known queue (enqueued to, configured or given settings) and its gates",
  options: {},
  async run({ clients, out }) {
    const res = await clients.admin.listQueues({});
    out.respond(rpc.listQueues.output, res, () => printQueueTable(out, res.queues));
  },
});

const get = command({
  name: "get",
  args: ["<queue>"],
  summary: "Show one queue's settings",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.getQueue({ queue: args.arg(0) });
    out.respond(rpc.getQueue.output, res, () => printQueue(out, res.queue));
  },
});

const ensure = command({
  name: "ensure",
  args: ["<queue>"],
  summary: "Create the queue if needed and set the profile settings given",
  details: `A typed flag wins over the same key in --profile. In --profile, null turns a setting off:
  taskq queue ensure mail --profile '{"max_running": 8, "claim_rate_per_minute": null}'
With --dry-run, the claim rate and max_running given are replayed over the queue's last hour:
  taskq queue ensure mail --claim-rate-per-minute 600 --claim-burst 10 --dry-run`,
  options: {
    ...dryRunFlags,
    profile: {
      type: "string",
      value: "JSON",
      help: "Profile keys as a JSON object; null turns a setting off",
    },
    ...(Object.fromEntries(Object.entries(profileFlags).map(([flag, [, spec]]) => [flag, spec])) as Record<
      ProfileFlag,
      OptionSpec
    >),
  },
  async run({ args, clients, out }) {
    const profile = parseProfile(args.str("profile"));
    for (const [flag, [key]] of Object.entries(profileFlags) as [
      ProfileFlag,
      (typeof profileFlags)[ProfileFlag],
    ][]) {
      const value = flag === "notify-mode" ? args.str(flag) : args.int(flag);
      if (value !== undefined) profile[key] = value;
    }
    if (isDryRun({ args })) {
      return runDryRun({ args, clients, out }, { case: "profile", value: { queue: args.arg(0), profile } });
    }
    const res = await clients.admin.ensureQueue({ queue: args.arg(0), profile });
    out.respond(rpc.ensureQueue.output, res, () => printQueue(out, res.queue));
  },
});

function parseProfile(text: string | undefined): JsonObject {
  if (text === undefined) return {};
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch (err) {
    throw new UsageError(`--profile is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new UsageError("--profile must be a JSON object, e.g. '{\"max_running\": 8}'");
  }
  return value;
}

const pause = command({
  name: "pause",
  args: ["<queue>"],
  summary: "Stop workers getting the queue's jobs, on every gateway",
  options: { ...createFlag },
  async run({ args, clients, out }) {
    await createIfAsked({ args, clients, out });
    const res = await clients.admin.pauseQueue({ queue: args.arg(0) });
    out.respond(rpc.pauseQueue.output, res, () => out.line(`paused ${args.arg(0)}`));
  },
});

const resume = command({
  name: "resume",
  args: ["<queue>"],
  summary: "Let workers take the queue's jobs again (starts the slow-start ramp if set)",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.resumeQueue({ queue: args.arg(0) });
    out.respond(rpc.resumeQueue.output, res, () => out.line(`resumed ${args.arg(0)}`));
  },
});

const clear = command({
  name: "clear",
  args: ["<queue>"],
  summary: "Delete every waiting job of the queue (never running ones); needs --yes",
  options: { yes: { type: "boolean", help: "Confirm: the deleted jobs are gone for good" } },
  async run({ args, clients, out }) {
    if (!args.flag("yes")) {
      throw new UsageError(`refusing to clear ${args.arg(0)} without --yes (it deletes every waiting job)`);
    }
    const res = await clients.admin.clearQueue({ queue: args.arg(0) });
    out.respond(rpc.clearQueue.output, res, () =>
      out.line(`cleared ${res.cleared} waiting job${res.cleared === 1n ? "" : "s"} from ${args.arg(0)}`),
    );
  },
});

const setConcurrency = command({
  name: "set-concurrency",
  args: ["<queue>"],
  summary: "Set the fleet-wide cap on the queue's running jobs (max_running), or remove it",
  details: `With --dry-run, nothing changes: the queue's last hour is replayed under the new cap:
  taskq queue set-concurrency mail --max-running 8 --dry-run`,
  options: {
    ...createFlag,
    ...dryRunFlags,
    "max-running": N("At most N running jobs, 1 to 1,000,000"),
    off: { type: "boolean", help: "Remove the cap" },
  },
  async run({ args, clients, out }) {
    const dry = dryRunWithoutCreate({ args, clients, out });
    if (!dry) await createIfAsked({ args, clients, out });
    args.oneOf("max-running", "off");
    const req = {
      queue: args.arg(0),
      maxRunning: args.int("max-running", { min: 1, max: 1_000_000, off: "removes the cap" }),
    };
    if (dry) return runDryRun({ args, clients, out }, { case: "maxRunning", value: req });
    const res = await clients.admin.setQueueConcurrency(req);
    out.respond(rpc.setQueueConcurrency.output, res, () => printQueue(out, res.queue));
  },
});

const setThrottle = command({
  name: "set-throttle",
  args: ["<queue>"],
  summary: "Allow at most --limit claims per --period-ms, cluster-wide",
  details: `A throttle from the gateway's config file can't be changed here (change it there).
With --dry-run, nothing changes: the queue's last hour is replayed under the new throttle:
  taskq queue set-throttle emails --limit 10 --period-ms 60000 --dry-run`,
  options: {
    ...createFlag,
    ...dryRunFlags,
    limit: N("Claims per period, 1 to 100,000"),
    "period-ms": N("Period in milliseconds, 1,000 to 86,400,000"),
  },
  async run({ args, clients, out }) {
    const dry = dryRunWithoutCreate({ args, clients, out });
    if (!dry) await createIfAsked({ args, clients, out });
    const req = {
      queue: args.arg(0),
      limit: args.requiredInt("limit", { min: 1, max: 100_000 }),
      periodMs: args.requiredInt("period-ms"),
    };
    if (dry) return runDryRun({ args, clients, out }, { case: "throttle", value: req });
    const res = await clients.admin.setQueueThrottle(req);
    out.respond(rpc.setQueueThrottle.output, res, () => printQueue(out, res.queue));
  },
});

const unthrottle = command({
  name: "unthrottle",
  args: ["<queue>"],
  summary: "Remove the queue's throttle (not one from the gateway's config file)",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.deleteQueueThrottle({ queue: args.arg(0) });
    out.respond(rpc.deleteQueueThrottle.output, res, () => printQueue(out, res.queue));
  },
});

const setAging = command({
  name: "set-aging",
  args: ["<queue>"],
  summary: "Age waiting jobs' priority (+1 per --aging-seconds waited), or --off for strict priority",
  options: {
    ...createFlag,
    "aging-seconds": N("Seconds per +1 priority step, 1 to 31,536,000"),
    off: { type: "boolean", help: "Strict priority" },
  },
  async run({ args, clients, out }) {
    await createIfAsked({ args, clients, out });
    args.oneOf("aging-seconds", "off");
    const res = await clients.admin.setPriorityAging({
      queue: args.arg(0),
      agingSeconds: args.int("aging-seconds", { min: 1, max: 31_536_000, off: "for strict priority" }),
    });
    out.respond(rpc.setPriorityAging.output, res, () => printQueue(out, res.queue));
  },
});

/** --off goes alone: the value flags of `others` are refused with it. */
function offAlone(args: { has(name: string): boolean }, others: readonly string[]): void {
  if (!args.has("off")) return;
  const given = others.filter((o) => args.has(o));
  if (given.length > 0) throw new UsageError(`--off takes no other flags (got --${given.join(", --")})`);
}

function ratio(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = /^\s*[+-]?(\d+\.?\d*|\.\d+)\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isFinite(n))
    throw new UsageError(`--failure-ratio must be a number above 0 and at most 1, got "${raw}"`);
  return n;
}

const setBreaker = command({
  name: "set-breaker",
  args: ["<queue>"],
  summary: "Turn on the circuit breaker (streak trigger) or change it; --off disables the whole breaker",
  details: `Opens after --failure-threshold consecutive failed settles, fleet-wide; after --cooldown-seconds it
admits one probe; --half-open-successes probe successes close it (and start the ramp), a failure re-opens it:
  taskq queue set-breaker mail --failure-threshold 5 --cooldown-seconds 30 --half-open-successes 1`,
  options: {
    ...createFlag,
    "failure-threshold": N("Consecutive failures that open it, 1 to 1,000,000"),
    "cooldown-seconds": N("Seconds open before one probe is admitted, 1 to 86,400"),
    "half-open-successes": N("Probe successes that close it, 1 to 1,000 (default 1)"),
    off: { type: "boolean", help: "Disable the whole breaker (rate and latency triggers too)" },
  },
  async run({ args, clients, out }) {
    await createIfAsked({ args, clients, out });
    args.oneOf("failure-threshold", "off");
    offAlone(args, ["cooldown-seconds", "half-open-successes"]);
    const res = await clients.admin.setBreakerConfig({
      queue: args.arg(0),
      failureThreshold: args.int("failure-threshold", {
        min: 1,
        max: 1_000_000,
        off: "disables the breaker",
      }),
      cooldownSeconds: args.int("cooldown-seconds"),
      halfOpenSuccesses: args.int("half-open-successes"),
    });
    out.respond(rpc.setBreakerConfig.output, res, () => printQueue(out, res.queue));
  },
});

const setBreakerRate = command({
  name: "set-breaker-rate",
  args: ["<queue>"],
  summary: "Also trip the breaker on a failure ratio over a rolling window, or --off to remove that trigger",
  details: `  taskq queue set-breaker-rate mail --failure-ratio 0.5 --window-seconds 60 --min-volume 20`,
  options: {
    "failure-ratio": { type: "string", value: "R", help: "Failed share of settles, above 0 and at most 1" },
    "window-seconds": N("Rolling window, 1 to 86,400 seconds"),
    "min-volume": N("Settles in the window before it can trip, 1 to 1,000,000"),
    off: { type: "boolean", help: "Remove the rate trigger (keep the streak)" },
  },
  async run({ args, clients, out }) {
    args.oneOf("failure-ratio", "off");
    offAlone(args, ["window-seconds", "min-volume"]);
    const res = await clients.admin.setBreakerRate({
      queue: args.arg(0),
      failureRatio: ratio(args.str("failure-ratio")),
      windowSeconds: args.int("window-seconds"),
      minVolume: args.int("min-volume"),
    });
    out.respond(rpc.setBreakerRate.output, res, () => printQueue(out, res.queue));
  },
});

const setBreakerLatency = command({
  name: "set-breaker-latency",
  args: ["<queue>"],
  summary: "Also trip the breaker on average latency over a rolling window, or --off to remove that trigger",
  details: `Slow successes count too:
  taskq queue set-breaker-latency mail --threshold-ms 2000 --window-seconds 60 --min-volume 10`,
  options: {
    "threshold-ms": N("Average latency that trips it, 1 to 86,400,000 ms"),
    "window-seconds": N("Rolling window, 1 to 86,400 seconds"),
    "min-volume": N("Settles in the window before it can trip, 1 to 1,000,000"),
    off: { type: "boolean", help: "Remove the latency trigger (keep streak and rate)" },
  },
  async run({ args, clients, out }) {
    args.oneOf("threshold-ms", "off");
    offAlone(args, ["window-seconds", "min-volume"]);
    const res = await clients.admin.setBreakerLatency({
      queue: args.arg(0),
      thresholdMs: args.int("threshold-ms", {
        min: 1,
        max: 86_400_000,
        off: "removes the latency trigger",
      }),
      windowSeconds: args.int("window-seconds"),
      minVolume: args.int("min-volume"),
    });
    out.respond(rpc.setBreakerLatency.output, res, () => printQueue(out, res.queue));
  },
});

const tripBreaker = command({
  name: "trip-breaker",
  args: ["<queue>"],
  summary: "Force the breaker open (planned downstream maintenance), with a fresh cooldown",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.tripBreaker({ queue: args.arg(0) });
    out.respond(rpc.tripBreaker.output, res, () => printQueue(out, res.queue));
  },
});

const closeBreaker = command({
  name: "close-breaker",
  args: ["<queue>"],
  summary: "Force the breaker closed and start the slow-start ramp",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.closeBreaker({ queue: args.arg(0) });
    out.respond(rpc.closeBreaker.output, res, () => printQueue(out, res.queue));
  },
});

/** `taskq queue …` verbs on one queue's settings. */
export const queueCommands: readonly Command[] = [
  ls,
  get,
  ensure,
  pause,
  resume,
  clear,
  setConcurrency,
  setThrottle,
  unthrottle,
  setAging,
  setBreaker,
  setBreakerRate,
  setBreakerLatency,
  tripBreaker,
  closeBreaker,
];
