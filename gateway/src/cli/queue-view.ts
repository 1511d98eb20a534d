import {
  BreakerState,
  type QueueAdaptive,
  type QueueBreaker,
  type QueueSettings,
  type QueueThrottle,
  ThrottleSource,
} from "@taskq/sdk/proto";
import { type Cell, isoTime, type Output } from "./output.js";

const seconds = (n: number | undefined): string | undefined => (n === undefined ? undefined : `${n}s`);

/** "config" or "console": where a queue's throttle comes from. */
export function throttleSource(t: QueueThrottle): string {
  if (t.source === ThrottleSource.CONFIG) return "config";
  if (t.source === ThrottleSource.CONSOLE) return "console";
  return "unknown";
}

const throttleText = (t: QueueThrottle | undefined): string | undefined =>
  t ? `${t.limit}/${t.periodMs}ms` : undefined;

/** `taskq queue ls`: one row per queue; "-" means that gate is off (ADAPTIVE: max_running is fixed). */
export function printQueueTable(out: Output, queues: readonly QueueSettings[]): void {
  out.table(
    [
      "NAME",
      "PAUSED",
      "MAX_RUNNING",
      "ADAPTIVE",
      "THROTTLE",
      "SOURCE",
      "CLAIM_RATE",
      "BURST",
      "RAMP",
      "AGING",
      "TTL",
    ],
    queues.map((q): Cell[] => [
      q.name,
      q.paused,
      q.maxRunning,
      // The bounds max_running moves between while it is adaptive.
      q.adaptive ? `${q.adaptive.min}..${q.adaptive.max}` : undefined,
      throttleText(q.throttle),
      q.throttle ? throttleSource(q.throttle) : undefined,
      q.claimRatePerMinute === undefined ? undefined : `${q.claimRatePerMinute}/min`,
      q.claimBurst,
      seconds(q.rampSeconds),
      seconds(q.priorityAgingSeconds),
      seconds(q.defaultTtlSeconds),
    ]),
  );
}

/** `taskq queue get` and every verb that returns the queue: its settings as `key: value` lines. */
export function printQueue(out: Output, q: QueueSettings | undefined): void {
  if (!q) return;
  out.fields([
    ["name", q.name],
    ["paused", q.paused],
    ["max_running", q.maxRunning],
    [
      "throttle",
      q.throttle
        ? `${q.throttle.limit} per ${q.throttle.periodMs} ms (source ${throttleSource(q.throttle)})`
        : undefined,
    ],
    ["claim_rate_per_minute", q.claimRatePerMinute],
    ["claim_burst", q.claimBurst],
    ["ramp_seconds", q.rampSeconds],
    ["ramp_started_at", isoTime(q.rampStartedAt)],
    ["priority_aging_seconds", q.priorityAgingSeconds],
    ["default_ttl_seconds", q.defaultTtlSeconds],
    ["notify_mode", q.notifyMode],
    ...breakerFields(q.breaker),
    ...adaptiveFields(q.adaptive),
  ]);
}

function adaptiveFields(a: QueueAdaptive | undefined): [string, Cell][] {
  if (!a) return [["adaptive", undefined]];
  return [
    ["adaptive", `${a.min}..${a.max}, target ${a.targetLatencyMs} ms${a.slowStart ? " (slow start)" : ""}`],
    ["adaptive_reason", a.reason || undefined],
    ["adaptive_decided_at", isoTime(a.decidedAt)],
    ["adaptive_fixed_max_running", a.fixedMaxRunning],
  ];
}

const breakerStateName = (s: BreakerState): string =>
  s === BreakerState.OPEN ? "open" : s === BreakerState.HALF_OPEN ? "half_open" : "closed";

function breakerFields(b: QueueBreaker | undefined): [string, Cell][] {
  if (!b) return [["breaker", undefined]];
  return [
    ["breaker", breakerStateName(b.state)],
    [
      "breaker_streak",
      `${b.failureThreshold} failures, cooldown ${b.cooldownSeconds}s, ${b.halfOpenSuccesses} probe success(es) to close`,
    ],
    [
      "breaker_rate",
      b.rate
        ? `>= ${b.rate.failureRatio} failed over ${b.rate.windowSeconds}s, min ${b.rate.minVolume}`
        : undefined,
    ],
    [
      "breaker_latency",
      b.latency
        ? `avg >= ${b.latency.thresholdMs}ms over ${b.latency.windowSeconds}s, min ${b.latency.minVolume}`
        : undefined,
    ],
    ["breaker_failure_streak", b.failureStreak],
    ["breaker_opened_total", b.openedTotal],
    ["breaker_tripped_at", isoTime(b.trippedAt)],
    ["breaker_probe_job_id", b.probeJobId],
  ];
}
