/** Protobuf JSON of QueueSettings (AdminService.QueueFlow): default values are absent. */
export interface SettingsJson {
  name: string;
  paused?: boolean;
  maxRunning?: number;
  throttle?: { limit?: number; periodMs?: number; source?: string };
  claimRatePerMinute?: number;
  claimBurst?: number;
  rampSeconds?: number;
  /** RFC 3339. */
  rampStartedAt?: string;
  priorityAgingSeconds?: number;
  defaultTtlSeconds?: number;
  notifyMode?: string;
  breaker?: {
    state?: string;
    failureStreak?: number;
    failureThreshold?: number;
    cooldownSeconds?: number;
    halfOpenSuccesses?: number;
    rate?: { failureRatio?: number; windowSeconds?: number; minVolume?: number };
    latency?: { thresholdMs?: number; windowSeconds?: number; minVolume?: number };
    openedTotal?: number;
    trippedAt?: string;
    probeJobId?: string;
    probeSuccesses?: number;
  };
  /** Set while max_running is adaptive (maxRunning is then its value now). */
  adaptive?: {
    min?: number;
    max?: number;
    targetLatencyMs?: number;
    fixedMaxRunning?: number;
    slowStart?: boolean;
    /** RFC 3339. */
    decidedAt?: string;
    reason?: string;
  };
}

/** Protobuf JSON of a QueueHealthRow; `detail` is a Struct, so its keys stay snake_case. */
export interface HealthJson {
  queue: string;
  verdict?: string;
  detail?: {
    breaker?: {
      state?: string;
      failure_streak?: number;
      opened_total?: number;
      reopens_at?: string | null;
    } | null;
    oldest_ready_seconds?: number | null;
  };
}

/** Protobuf JSON of a QueueCountersRow: uint64 fields arrive as strings. */
export interface CountersJson {
  queue: string;
  queued?: string;
  scheduled?: string;
  running?: string;
  succeededLastMinute?: string;
  failedLastMinute?: string;
  succeededLastHour?: string;
  failedLastHour?: string;
  oldestReadySeconds?: number;
  throttledLastHour?: Record<string, string>;
}

export type BreakerState = "closed" | "open" | "half_open";

/** One line of the Queues page: a queue's settings, health and counters together. */
export interface QueueRow {
  name: string;
  /** paused, breaker_open, half_open, ramping, throttled, backlogged, idle or healthy. */
  verdict: string;
  paused: boolean;
  queued: number;
  scheduled: number;
  running: number;
  succeededLastMinute: number;
  failedLastMinute: number;
  succeededLastHour: number;
  failedLastHour: number;
  /** Seconds the oldest ready job has waited; null when none waits. */
  oldestReadySeconds: number | null;
  /** Polls declined in the last hour by reason (THROTTLE, PAUSED, ...), most first. */
  throttled: [reason: string, count: number][];
  /** Null when the queue has no circuit breaker. */
  breaker: { state: BreakerState; failureStreak: number; failureThreshold: number } | null;
  /** Null when running jobs are not capped. */
  maxRunning: number | null;
  /** The adaptive limit's bounds; null while max_running is fixed. */
  adaptive: { min: number; max: number; targetLatencyMs: number } | null;
  throttle: { limit: number; periodMs: number; source: "config" | "console" } | null;
  /** The claim rate (GCRA) in claims per minute; null when off. */
  rate: { perMinute: number; burst: number } | null;
}

const BREAKER_STATES: Record<string, BreakerState> = {
  BREAKER_STATE_CLOSED: "closed",
  BREAKER_STATE_OPEN: "open",
  BREAKER_STATE_HALF_OPEN: "half_open",
};

/**
 * Joins the three reads by queue name. A queue appears when any of them knows it: settings without
 * jobs, or jobs in a queue nobody configured.
 */
export function mergeQueues(
  settings: readonly SettingsJson[],
  health: readonly HealthJson[],
  counters: readonly CountersJson[],
): QueueRow[] {
  const bySettings = new Map(settings.map((s) => [s.name, s]));
  const byHealth = new Map(health.map((h) => [h.queue, h]));
  const byCounters = new Map(counters.map((c) => [c.queue, c]));
  const names = [...new Set([...bySettings.keys(), ...byHealth.keys(), ...byCounters.keys()])].sort();
  return names.map((name) => {
    const s = bySettings.get(name);
    const c = byCounters.get(name);
    const t = s?.throttle;
    return {
      name,
      verdict: byHealth.get(name)?.verdict ?? "idle",
      paused: s?.paused ?? false,
      queued: num(c?.queued),
      scheduled: num(c?.scheduled),
      running: num(c?.running),
      succeededLastMinute: num(c?.succeededLastMinute),
      failedLastMinute: num(c?.failedLastMinute),
      succeededLastHour: num(c?.succeededLastHour),
      failedLastHour: num(c?.failedLastHour),
      oldestReadySeconds: c?.oldestReadySeconds ?? null,
      throttled: Object.entries(c?.throttledLastHour ?? {})
        .map(([reason, n]): [string, number] => [reason, num(n)])
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])),
      breaker: s?.breaker
        ? {
            state: BREAKER_STATES[s.breaker.state ?? ""] ?? "closed",
            failureStreak: s.breaker.failureStreak ?? 0,
            failureThreshold: s.breaker.failureThreshold ?? 0,
          }
        : null,
      maxRunning: s?.maxRunning ?? null,
      adaptive: s?.adaptive
        ? {
            min: s.adaptive.min ?? 0,
            max: s.adaptive.max ?? 0,
            targetLatencyMs: s.adaptive.targetLatencyMs ?? 0,
          }
        : null,
      throttle: t
        ? {
            limit: t.limit ?? 0,
            periodMs: t.periodMs ?? 0,
            source: t.source === "THROTTLE_SOURCE_CONFIG" ? "config" : "console",
          }
        : null,
      rate:
        s?.claimRatePerMinute !== undefined
          ? { perMinute: s.claimRatePerMinute, burst: s.claimBurst ?? 1 }
          : null,
    };
  });
}

/** One page of the rows matching a search. */
export interface Page {
  rows: QueueRow[];
  /** Rows matching the search, on every page. */
  matching: number;
  /** 0-based, clamped to the pages there are. */
  page: number;
  pages: number;
}

/**
 * The rows whose name or verdict contains `search` (any case), cut to page `page` of `pageSize`. A
 * page past the end shows the last one, so a search that shrinks the list never shows an empty page.
 */
export function selectPage(rows: readonly QueueRow[], search: string, page: number, pageSize: number): Page {
  const needle = search.trim().toLowerCase();
  const matching = needle
    ? rows.filter((r) => r.name.toLowerCase().includes(needle) || r.verdict.includes(needle))
    : rows;
  const pages = Math.max(1, Math.ceil(matching.length / pageSize));
  const at = Math.min(Math.max(0, Math.floor(page)), pages - 1);
  return {
    rows: matching.slice(at * pageSize, (at + 1) * pageSize),
    matching: matching.length,
    page: at,
    pages,
  };
}

function num(v: string | number | undefined): number {
  return v === undefined ? 0 : Number(v);
}
