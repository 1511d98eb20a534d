import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { AdminService, BreakerState, type QueueSettings } from "@taskq/sdk/proto";
import { UsageError } from "./args.js";
import { type Command, command } from "./command.js";
import { type Cell, isoTime } from "./output.js";

const rpc = AdminService.method;
const INT64_MAX = 9_223_372_036_854_775_807n;
/** `--limit` of audit, as its help states it. */
const AUDIT_LIMIT = { min: 1, max: 1000 };

/** `--before-id N`: an audit id (int64), undefined when absent. */
function auditId(raw: string | undefined): bigint | undefined {
  if (raw === undefined) return undefined;
  const n = /^\s*\d+\s*$/.test(raw) ? BigInt(raw.trim()) : -1n;
  if (n < 1n || n > INT64_MAX) {
    throw new UsageError(`--before-id must be an audit entry id (a whole number from 1), got "${raw}"`);
  }
  return n;
}

/** What changed between an audit row's `before` and `after`, as "key: old -> new" (nested keys dotted). */
export function auditChange(detail: JsonObject | undefined): string {
  const changes: string[] = [];
  const walk = (path: string, before: JsonValue | undefined, after: JsonValue | undefined): void => {
    const isObj = (x: JsonValue | undefined): x is JsonObject =>
      typeof x === "object" && x !== null && !Array.isArray(x);
    if (isObj(before) && isObj(after)) {
      for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
        walk(path ? `${path}.${k}` : k, before[k], after[k]);
      }
      return;
    }
    const text = (x: JsonValue | undefined) => (x === undefined ? "null" : JSON.stringify(x));
    if (text(before) !== text(after)) changes.push(`${path || "value"}: ${text(before)} -> ${text(after)}`);
  };
  walk("", detail?.before, detail?.after);
  return changes.join(", ") || "no change";
}

const audit = command({
  name: "audit",
  args: ["<queue>"],
  summary: "The queue's operator audit log (actor, verb, what changed), newest first",
  details: `Shows 50 entries by default; page with the last id shown:
  taskq queue audit mail
  taskq queue audit mail --before-id 1234
Flow-limit changes are logged under flow:<key>, e.g. taskq queue audit flow:provider.acme, and
schedule changes under schedule:<name>, e.g. taskq queue audit schedule:nightly-report`,
  options: {
    "before-id": { type: "string", value: "ID", help: "Only entries with an id below ID (the next page)" },
    limit: { type: "string", value: "N", help: "At most N entries, 1 to 1,000 (default 50)" },
  },
  async run({ args, clients, out }) {
    const res = await clients.admin.listQueueAudit({
      queue: args.arg(0),
      limit: args.int("limit", AUDIT_LIMIT),
      beforeId: auditId(args.str("before-id")),
    });
    out.respond(rpc.listQueueAudit.output, res, () => {
      out.table(
        ["ID", "AT", "EVENT", "ACTOR", "CHANGE"],
        res.entries.map((e): Cell[] => [
          e.id,
          isoTime(e.createdAt),
          e.eventType,
          e.actor,
          auditChange(e.detail),
        ]),
      );
      const last = res.entries.at(-1);
      if (last && res.entries.length === (args.int("limit", AUDIT_LIMIT) ?? 50)) {
        out.line(`next page: taskq queue audit ${args.arg(0)} --before-id ${last.id}`);
      }
    });
  },
});

const num = (v: JsonValue | undefined): Cell => (typeof v === "number" ? v : undefined);
const obj = (v: JsonValue | undefined): JsonObject | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? v : undefined;

const health = command({
  name: "health",
  args: ["[queue]"],
  summary: "Each queue's health verdict now (paused, breaker_open, throttled, backlogged, ...) and levels",
  details: `Without a queue: every known queue (enqueued to, configured or given settings).
Verdicts, first that applies: paused, breaker_open, half_open, ramping, throttled, backlogged, idle, healthy.`,
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.queueHealth({ queue: args.optionalArg(0) });
    out.respond(rpc.queueHealth.output, res, () =>
      out.table(
        ["QUEUE", "VERDICT", "QUEUED", "SCHEDULED", "RUNNING", "OLDEST_READY", "BREAKER"],
        res.rows.map((r): Cell[] => {
          const levels = obj(r.detail?.levels);
          const breaker = obj(r.detail?.breaker);
          const oldest = num(r.detail?.oldest_ready_seconds);
          const state = typeof breaker?.state === "string" ? breaker.state : undefined;
          return [
            r.queue,
            r.verdict,
            num(levels?.queued),
            num(levels?.scheduled),
            num(levels?.running),
            oldest === undefined ? undefined : `${oldest}s`,
            state === "open" && typeof breaker?.reopens_at === "string"
              ? `open until ${breaker.reopens_at}`
              : state,
          ];
        }),
      ),
    );
  },
});

const counters = command({
  name: "counters",
  args: ["[queue]"],
  summary: "Live levels, throughput (finished in the last minute / hour) and throttled verdicts per queue",
  details: "Without a queue: every known queue (enqueued to, configured or given settings).",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.queueCounters({ queue: args.optionalArg(0) });
    out.respond(rpc.queueCounters.output, res, () =>
      out.table(
        [
          "QUEUE",
          "QUEUED",
          "SCHEDULED",
          "RUNNING",
          "SUCCEEDED_1M",
          "FAILED_1M",
          "SUCCEEDED_1H",
          "FAILED_1H",
          "OLDEST_READY",
          "THROTTLED_1H",
        ],
        res.rows.map((r): Cell[] => [
          r.queue,
          r.queued,
          r.scheduled,
          r.running,
          r.succeededLastMinute,
          r.failedLastMinute,
          r.succeededLastHour,
          r.failedLastHour,
          r.oldestReadySeconds === undefined ? undefined : `${r.oldestReadySeconds}s`,
          Object.entries(r.throttledLastHour)
            .map(([reason, n]) => `${reason}=${n}`)
            .join(" "),
        ]),
      ),
    );
  },
});

const breakerStateName = (s: BreakerState): string =>
  s === BreakerState.OPEN ? "open" : s === BreakerState.HALF_OPEN ? "half_open" : "closed";

const flow = command({
  name: "flow",
  args: ["[queue]"],
  summary: "Flow state: breaker state, streak, opened total, tripped at, aging, ramp start, limits",
  details: "Without a queue: one row per queue with settings.",
  options: {},
  async run({ args, clients, out }) {
    const res = await clients.admin.queueFlow({ queue: args.optionalArg(0) });
    out.respond(rpc.queueFlow.output, res, () => {
      const rows = res.queues.map(flowFields);
      const [only] = rows;
      if (args.optionalArg(0) !== undefined && only) return out.fields(only);
      out.table(
        (only ?? flowFields(undefined)).map(([k]) => k.toUpperCase()),
        rows.map((r) => r.map(([, v]) => v)),
      );
    });
  },
});

/** The flow state of a queue as (name, value) pairs: lines for one queue, columns for many. */
function flowFields(q: QueueSettings | undefined): [string, Cell][] {
  return [
    ["queue", q?.name],
    ["paused", q?.paused],
    ["breaker_state", q?.breaker ? breakerStateName(q.breaker.state) : "off"],
    ["breaker_failure_streak", q?.breaker?.failureStreak],
    ["breaker_opened_total", q?.breaker?.openedTotal],
    ["breaker_tripped_at", isoTime(q?.breaker?.trippedAt)],
    ["breaker_probe_job_id", q?.breaker?.probeJobId],
    ["priority_aging_seconds", q?.priorityAgingSeconds],
    ["ramp_seconds", q?.rampSeconds],
    ["ramp_started_at", isoTime(q?.rampStartedAt)],
    ["max_running", q?.maxRunning],
    ["throttle", q?.throttle ? `${q.throttle.limit} per ${q.throttle.periodMs} ms` : undefined],
    ["claim_rate_per_minute", q?.claimRatePerMinute],
    // max_running is the adaptive limit's value now while it is on.
    [
      "adaptive",
      q?.adaptive
        ? `${q.adaptive.min}..${q.adaptive.max}, target ${q.adaptive.targetLatencyMs} ms`
        : undefined,
    ],
    ["adaptive_reason", q?.adaptive?.reason || undefined],
  ];
}

/** `taskq queue …` reads of the operator plane: audit log, health, counters, flow state. */
export const observeCommands: readonly Command[] = [audit, health, counters, flow];

const pruneAudit = command({
  name: "prune-audit",
  args: [],
  summary: "Delete operator audit entries older than --older-than-hours, every queue; needs --yes",
  details: `Safe to run on a schedule:
  taskq maintenance prune-audit --older-than-hours 2160 --yes`,
  options: {
    "older-than-hours": {
      type: "string",
      value: "N",
      help: "Delete entries older than N hours, 1 to 876,000",
    },
    yes: { type: "boolean", help: "Confirm: the deleted entries are gone for good" },
  },
  async run({ args, clients, out }) {
    const hours = args.requiredInt("older-than-hours");
    if (!args.flag("yes")) {
      throw new UsageError(
        `refusing to prune the audit log without --yes (it deletes entries older than ${hours} hours)`,
      );
    }
    const res = await clients.admin.pruneQueueAudit({ olderThanHours: hours });
    out.respond(rpc.pruneQueueAudit.output, res, () =>
      out.line(
        `removed ${res.removed} audit entr${res.removed === 1n ? "y" : "ies"} older than ${hours} hours`,
      ),
    );
  },
});

/** `taskq maintenance …` verbs. */
export const maintenanceCommands: readonly Command[] = [pruneAudit];
