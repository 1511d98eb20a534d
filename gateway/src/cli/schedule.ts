import type { ScheduleSpec } from "@taskq/sdk/proto";
import { AdminService, type Schedule } from "@taskq/sdk/proto";
import { type Args, type OptionSpec, UsageError } from "./args.js";
import { type Command, command } from "./command.js";
import { contentTypeOf } from "./job.js";
import { type Cell, isoTime, type Output } from "./output.js";

const rpc = AdminService.method;
const utf8 = new TextEncoder();
const N = (help: string): OptionSpec => ({ type: "string", value: "N", help });

/** The definition flags of `schedule create` and `schedule update`. */
const specFlags = {
  cron: {
    type: "string",
    value: "EXPR",
    help: "5 fields (min hour day-of-month month day-of-week), or 6 with seconds first",
  },
  "time-zone": { type: "string", value: "TZ", help: "UTC (default) or an IANA name, e.g. Europe/Berlin" },
  queue: { type: "string", value: "QUEUE", help: "Queue each fired job goes to" },
  payload: { type: "string", value: "JSON|TEXT", help: "Job payload (JSON is sent as application/json)" },
  "content-type": { type: "string", value: "MIME", help: "Override the payload's content type" },
  priority: N("Higher runs first, -32768 to 32767 (default 0)"),
  "flow-key": { type: "string", value: "KEY", help: "Key metered by flow limits (empty removes it)" },
  headers: {
    type: "string",
    value: "JSON",
    help: 'Job headers as a JSON object of strings, e.g. \'{"a": "b"}\'',
  },
  "max-attempts": N("1 to 1000 (0: the gateway's default)"),
  "ttl-seconds": N("Cancel a fired job not started within N s (0: the queue's default)"),
  "missed-policy": {
    type: "string",
    value: "POLICY",
    help: "Slots missed while no gateway ran: skip (default) or fire_once (the latest, once)",
  },
  "smear-seconds": N("Fire at a fixed offset in [0, N) s derived from the name, 0 to 86,400"),
} as const satisfies Record<string, OptionSpec>;

type SpecFlag = keyof typeof specFlags;

function specOf(name: string, args: Args<SpecFlag>): ScheduleSpec {
  const payload = args.str("payload");
  return {
    $typeName: "taskq.v1.ScheduleSpec",
    name,
    cron: args.str("cron"),
    timeZone: args.str("time-zone"),
    queue: args.str("queue"),
    payload: payload === undefined ? undefined : utf8.encode(payload),
    contentType: args.str("content-type") ?? (payload === undefined ? undefined : contentTypeOf(payload)),
    priority: args.int("priority", { min: -32768, max: 32767 }),
    flowKey: args.str("flow-key"),
    headers: headersOf(args.str("headers")),
    maxAttempts: args.int("max-attempts"),
    ttlSeconds: args.int("ttl-seconds"),
    missedPolicy: args.str("missed-policy"),
    smearSeconds: args.int("smear-seconds"),
  };
}

function headersOf(text: string | undefined): ScheduleSpec["headers"] {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--headers is not valid JSON: ${(err as Error).message}`);
  }
  if (
    value === null ||
    typeof value !== "object" ||
    Array.isArray(value) ||
    Object.values(value).some((v) => typeof v !== "string")
  ) {
    throw new UsageError('--headers must be a JSON object of strings, e.g. \'{"team": "billing"}\'');
  }
  return { $typeName: "taskq.v1.JobHeaders", entries: value as Record<string, string> };
}

const seconds = (n: number) => (n === 0 ? undefined : `${n}s`);

function printScheduleTable(out: Output, schedules: readonly Schedule[]): void {
  out.table(
    ["NAME", "CRON", "TIME_ZONE", "QUEUE", "SMEAR", "OFFSET", "MISSED", "PAUSED", "NEXT_RUN"],
    schedules.map((s): Cell[] => [
      s.name,
      s.cron,
      s.timeZone,
      s.queue,
      seconds(s.smearSeconds),
      s.smearSeconds === 0 ? undefined : `${(s.smearOffsetMs / 1000).toFixed(3)}s`,
      s.missedPolicy,
      s.paused,
      isoTime(s.nextRunAt),
    ]),
  );
}

function printSchedule(out: Output, s: Schedule | undefined): void {
  if (!s) return;
  out.fields([
    ["name", s.name],
    ["cron", s.cron],
    ["time_zone", s.timeZone],
    ["queue", s.queue],
    ["payload_bytes", s.payloadBytes],
    ["content_type", s.contentType],
    ["priority", s.priority],
    ["flow_key", s.flowKey],
    ["headers", Object.keys(s.headers).length ? JSON.stringify(s.headers) : undefined],
    ["max_attempts", s.maxAttempts],
    ["ttl_seconds", s.ttlSeconds],
    ["missed_policy", s.missedPolicy],
    ["smear_seconds", s.smearSeconds],
    ["smear_offset_ms", s.smearOffsetMs],
    ["paused", s.paused],
    ["last_slot", isoTime(s.lastSlot)],
    ["next_slot", isoTime(s.nextSlot)],
    ["next_run_at", isoTime(s.nextRunAt)],
  ]);
}

const ls = command({
  name: "ls",
  args: [],
  summary: "List every schedule with its next run",
  options: {},
  async run({ clients, out }) {
    const res = await clients.admin.listSchedules({});
    out.respond(rpc.listSchedules.output, res, () => printScheduleTable(out, res.schedules));
  },
});

const get = command({
  name: "get",
  args: ["<name>"],
  summary: "Show one schedule",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.getSchedule({ name: args.arg(0) });
    out.respond(rpc.getSchedule.output, res, () => printSchedule(out, res.schedule));
  },
});

const create = command({
  name: "create",
  args: ["<name>"],
  summary: "Create a cron schedule that enqueues a job into --queue once per slot",
  details: `Each slot fires once, on any number of gateways. Slots before the schedule exists never fire.
  taskq schedule create nightly-report --cron '0 3 * * *' --time-zone Europe/Berlin --queue reports \\
    --payload '{"kind": "nightly"}' --smear-seconds 300
  taskq schedule create heartbeat --cron '*/10 * * * * *' --queue pings   # 6 fields: seconds first`,
  options: specFlags,
  async run({ args, clients, out }) {
    if (!args.has("cron")) throw new UsageError("missing --cron");
    if (!args.has("queue")) throw new UsageError("missing --queue");
    const res = await clients.admin.createSchedule({ schedule: specOf(args.arg(0), args) });
    out.respond(rpc.createSchedule.output, res, () => printSchedule(out, res.schedule));
  },
});

const update = command({
  name: "update",
  args: ["<name>"],
  summary: "Change the flags given; a new cron or time zone starts afresh from now",
  options: specFlags,
  async run({ args, clients, out }) {
    const res = await clients.admin.updateSchedule({ schedule: specOf(args.arg(0), args) });
    out.respond(rpc.updateSchedule.output, res, () => printSchedule(out, res.schedule));
  },
});

const del = command({
  name: "delete",
  args: ["<name>"],
  summary: "Delete a schedule (jobs it already fired stay); needs --yes",
  options: { yes: { type: "boolean", help: "Confirm: the schedule is gone for good" } },
  async run({ args, clients, out }) {
    if (!args.flag("yes")) throw new UsageError(`refusing to delete schedule ${args.arg(0)} without --yes`);
    const res = await clients.admin.deleteSchedule({ name: args.arg(0) });
    out.respond(rpc.deleteSchedule.output, res, () => out.line(`deleted schedule ${args.arg(0)}`));
  },
});

const pause = command({
  name: "pause",
  args: ["<name>"],
  summary: "Stop firing; slots that pass while paused are skipped",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.pauseSchedule({ name: args.arg(0) });
    out.respond(rpc.pauseSchedule.output, res, () => out.line(`paused schedule ${args.arg(0)}`));
  },
});

const resume = command({
  name: "resume",
  args: ["<name>"],
  summary: "Fire again from the next slot (no catch-up of the paused ones)",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.resumeSchedule({ name: args.arg(0) });
    out.respond(rpc.resumeSchedule.output, res, () => out.line(`resumed schedule ${args.arg(0)}`));
  },
});

const setSmear = command({
  name: "set-smear",
  args: ["<name>"],
  summary: "Fire at a fixed per-schedule offset in [0, --smear-seconds), so :00 entries de-align",
  details: `The offset is a hash of the name: the same on every gateway and after every restart.
  taskq schedule set-smear nightly-report --smear-seconds 300
  taskq schedule set-smear nightly-report --smear-seconds 0   # fire on the slot again`,
  options: { "smear-seconds": N("Smear window, 0 to 86,400 seconds") },
  async run({ args, clients, out }) {
    const res = await clients.admin.setScheduleSmear({
      name: args.arg(0),
      smearSeconds: args.requiredInt("smear-seconds"),
    });
    out.respond(rpc.setScheduleSmear.output, res, () => printSchedule(out, res.schedule));
  },
});

/** `taskq schedule …`: named cron schedules. */
export const scheduleCommands: readonly Command[] = [ls, get, create, update, del, pause, resume, setSmear];

/** `taskq queue redrive <queue>`: failed jobs back to the queue, smeared. */
export const redrive = command({
  name: "redrive",
  args: ["<queue>"],
  summary: "Move up to --limit failed jobs back to the queue, spread over --smear-seconds",
  details: `Oldest failures first. Each job gets its attempt budget again (its attempt number keeps counting).
  taskq queue redrive mail --limit 1000 --smear-seconds 60`,
  options: {
    limit: N("Most jobs to move, 1 to 100,000"),
    "smear-seconds": N("Spread their run times over [now, now + N s), 0 to 86,400 (default 0: ready now)"),
  },
  async run({ args, clients, out }) {
    const res = await clients.admin.redriveFailed({
      queue: args.arg(0),
      limit: args.requiredInt("limit", { min: 1, max: 100_000 }),
      smearSeconds: args.int("smear-seconds") ?? 0,
    });
    out.respond(rpc.redriveFailed.output, res, () =>
      out.line(`redrove ${res.redriven} failed job${res.redriven === 1n ? "" : "s"} of ${args.arg(0)}`),
    );
  },
});
