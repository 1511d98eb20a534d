import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from "../errors.js";
import type { Db } from "./db.js";
import { loadQueries } from "./queries.js";
import {
  type FlowLimit,
  type FlowLimitRow,
  FlowLimitRowSchema,
  FlowLimitSchema,
  parseQueueSettings,
  parseStored,
  type QueueSettings,
} from "./queue-settings.js";

const q = loadQueries("queues.sql", [
  "QueuesGet",
  "QueuesList",
  "QueueGet",
  "QueuesNote",
  "QueueEnsure",
  "QueuePause",
  "QueueResume",
  "QueueClear",
  "QueueSetConcurrency",
  "QueueSetAdaptive",
  "AdaptiveChanges",
  "QueueSetThrottle",
  "QueueDeleteThrottle",
  "QueueSetAging",
  "FlowLimitSet",
  "FlowLimitsList",
  "BreakerConfig",
  "BreakerRate",
  "BreakerLatency",
  "BreakerTrip",
  "BreakerClose",
  "AuditList",
  "AuditPrune",
  "QueueHealth",
  "QueueCounters",
  "ThrottledAdd",
  "ConfigThrottlesApply",
] as const);

/** Thrown to roll a rehearsal's transaction back. */
const ROLLBACK = Symbol("rollback");

/** The channel every queue-settings change notifies, with the queue name as payload. */
export const QUEUES_CHANNEL = "taskq_queues";
/** The channel every flow-limit change notifies, with the flow key as payload. */
export const FLOW_LIMITS_CHANNEL = "taskq_flow_limits";

export type {
  AdaptiveSettings,
  BreakerSettings,
  BreakerState,
  FlowLimitRow,
  QueueSettings,
} from "./queue-settings.js";

/**
 * Called with the queue's name before a verb of this instance changes its settings; the function it
 * returns runs once the change has committed, and the verb answers after it.
 */
export type SettingsWatcher = (queue: string) => () => void | Promise<void>;

/** One operator audit row (taskq.list_queue_audit). */
export interface AuditEntry {
  /** bigint as text. */
  id: string;
  event_type: string;
  actor: string;
  /** {before, after}. */
  detail: Record<string, unknown>;
  created_ms: number;
}

/** One change of an adaptive limit (taskq.list_adaptive_changes). */
export interface AdaptiveChange {
  /** bigint as text. */
  id: string;
  at_ms: number;
  limit_before: number | null;
  /** null: turned off, leaving the queue without a cap. */
  limit_after: number | null;
  reason: string;
  /** The decision's inputs: settles, failures, avg_latency_ms, running (or the bounds an operator set). */
  figures: Record<string, unknown>;
}

/** One row of taskq.queue_health. */
export interface HealthRow {
  queue: string;
  verdict: string;
  detail: Record<string, unknown>;
}

/** One row of taskq.queue_counters; counts are bigint as text. */
export interface CountersRow {
  queue: string;
  queued: string;
  scheduled: string;
  running: string;
  succeeded_last_minute: string;
  failed_last_minute: string;
  succeeded_last_hour: string;
  failed_last_hour: string;
  oldest_ready_seconds: number | null;
  /** Throttled verdicts of the last hour by reason, e.g. { THROTTLE: 12 }. */
  throttled_last_hour: Record<string, number>;
}

/**
 * Queue profiles and operator verbs. Each verb is one SQL function call (validation, change, audit
 * row and notification in one transaction); database errors become domain errors naming the field.
 */
export class QueueStore {
  readonly #watchers: SettingsWatcher[] = [];

  constructor(private readonly db: Db) {}

  /** Adds a watcher of every settings verb this instance runs (see SettingsWatcher). */
  watchSettings(watcher: SettingsWatcher): void {
    this.#watchers.push(watcher);
  }

  // Settings are parsed where they are read: Profiles caches queuesGet, so claims pay nothing for it.
  async queuesGet(names: readonly string[]): Promise<Map<string, QueueSettings>> {
    const rows = await this.db.query<{ name: string; settings: unknown }>(q.QueuesGet, [names]);
    return new Map(rows.map((r) => [r.name, parseQueueSettings(r.name, r.settings)]));
  }

  /** Every known queue (enqueued to, configured or given settings), by name (taskq.known_queues). */
  async queuesList(): Promise<{ name: string; settings: QueueSettings }[]> {
    const rows = await this.db.query<{ name: string; settings: unknown }>(q.QueuesList);
    return rows.map((r) => ({ name: r.name, settings: parseQueueSettings(r.name, r.settings) }));
  }

  /**
   * One known queue's settings as queuesList shows them (every gate off for a queue only enqueued to);
   * NotFoundError naming it for a queue never seen.
   */
  async queueGet(name: string): Promise<QueueSettings> {
    const [row] = await this.call<{ settings: unknown }>(q.QueueGet, [name]);
    if (!row) throw new NotFoundError(`queue ${name} not found (never enqueued to, no settings)`);
    return parseQueueSettings(name, row.settings);
  }

  /** Records queues as known (the config file's), so every list shows them before their first job. */
  async queuesNote(names: readonly string[]): Promise<void> {
    if (names.length > 0) await this.call(q.QueuesNote, [names]);
  }

  queueEnsure(name: string, profile: Record<string, unknown>, actor: string): Promise<QueueSettings> {
    return this.settings(q.QueueEnsure, [name, JSON.stringify(profile), actor]);
  }

  queuePause(name: string, actor: string): Promise<QueueSettings> {
    return this.settings(q.QueuePause, [name, actor]);
  }

  queueResume(name: string, actor: string): Promise<QueueSettings> {
    return this.settings(q.QueueResume, [name, actor]);
  }

  /** Deletes the queue's waiting jobs; returns how many. */
  async queueClear(name: string, actor: string): Promise<number> {
    const [row] = await this.call<{ cleared: string }>(q.QueueClear, [name, actor]);
    return Number(row?.cleared ?? 0);
  }

  queueSetConcurrency(name: string, maxRunning: number | null, actor: string): Promise<QueueSettings> {
    return this.settings(q.QueueSetConcurrency, [name, maxRunning, actor]);
  }

  /**
   * set_adaptive_concurrency: max_running moves between min and max from the queue's settles; a null
   * min (max and target null too) turns it off and restores the cap it stood in for.
   */
  queueSetAdaptive(
    name: string,
    min: number | null,
    max: number | null,
    targetLatencyMs: number | null,
    actor: string,
  ): Promise<QueueSettings> {
    return this.settings(q.QueueSetAdaptive, [name, min, max, targetLatencyMs, actor]);
  }

  /** The changes of the queue's adaptive limit, newest first; limit default 100. */
  adaptiveChanges(queue: string, limit: number | null): Promise<AdaptiveChange[]> {
    return this.call<AdaptiveChange>(q.AdaptiveChanges, [queue, limit]);
  }

  /** `source` "config" is only for the gateway applying its own config file. */
  queueSetThrottle(
    name: string,
    limit: number,
    periodMs: number,
    actor: string,
    source: "config" | "console" = "console",
  ): Promise<QueueSettings> {
    return this.settings(q.QueueSetThrottle, [name, limit, periodMs, actor, source]);
  }

  queueDeleteThrottle(
    name: string,
    actor: string,
    source: "config" | "console" = "console",
  ): Promise<QueueSettings> {
    return this.settings(q.QueueDeleteThrottle, [name, actor, source]);
  }

  queueSetAging(name: string, seconds: number | null, actor: string): Promise<QueueSettings> {
    return this.settings(q.QueueSetAging, [name, seconds, actor]);
  }

  /** Sets (or with a null rate removes) a flow key's limit; returns it, or null when removed. */
  async flowLimitSet(
    key: string,
    ratePerMinute: number | null,
    burst: number | null,
    actor: string,
  ): Promise<FlowLimit | null> {
    const [row] = await this.call<{ limit: unknown }>(q.FlowLimitSet, [key, ratePerMinute, burst, actor]);
    const limit = row?.limit ?? null;
    return limit === null ? null : parseStored(FlowLimitSchema, `flow key "${key}"`, limit);
  }

  async flowLimitsList(): Promise<FlowLimitRow[]> {
    const rows = await this.db.query<{ flow_key: unknown }>(q.FlowLimitsList);
    return rows.map((r) => parseStored(FlowLimitRowSchema, `flow key "${String(r.flow_key)}"`, r));
  }

  /** set_breaker_config; a null threshold turns the whole breaker off. */
  breakerConfig(
    name: string,
    failureThreshold: number | null,
    cooldownSeconds: number | null,
    halfOpenSuccesses: number | null,
    actor: string,
  ): Promise<QueueSettings> {
    return this.settings(q.BreakerConfig, [
      name,
      failureThreshold,
      cooldownSeconds,
      halfOpenSuccesses,
      actor,
    ]);
  }

  /** set_breaker_rate; a null ratio removes the rate trigger. */
  breakerRate(
    name: string,
    failureRatio: number | null,
    windowSeconds: number | null,
    minVolume: number | null,
    actor: string,
  ): Promise<QueueSettings> {
    return this.settings(q.BreakerRate, [name, failureRatio, windowSeconds, minVolume, actor]);
  }

  /** set_breaker_latency; a null threshold removes the latency trigger. */
  breakerLatency(
    name: string,
    thresholdMs: number | null,
    windowSeconds: number | null,
    minVolume: number | null,
    actor: string,
  ): Promise<QueueSettings> {
    return this.settings(q.BreakerLatency, [name, thresholdMs, windowSeconds, minVolume, actor]);
  }

  breakerTrip(name: string, actor: string): Promise<QueueSettings> {
    return this.settings(q.BreakerTrip, [name, actor]);
  }

  breakerClose(name: string, actor: string): Promise<QueueSettings> {
    return this.settings(q.BreakerClose, [name, actor]);
  }

  /** The queue's audit rows, newest first; `beforeId` pages (ids below it); limit default 50. */
  auditList(queue: string, limit: number | null, beforeId: bigint | null): Promise<AuditEntry[]> {
    return this.call<AuditEntry>(q.AuditList, [queue, limit, beforeId === null ? null : beforeId.toString()]);
  }

  /** Deletes audit rows older than `olderThanHours`; returns how many. */
  async auditPrune(olderThanHours: number): Promise<bigint> {
    const [row] = await this.call<{ removed: string }>(q.AuditPrune, [olderThanHours]);
    return BigInt(row?.removed ?? 0);
  }

  /** taskq.queue_health for one queue, or every queue when null. */
  queueHealth(queue: string | null): Promise<HealthRow[]> {
    return this.call<HealthRow>(q.QueueHealth, [queue]);
  }

  /** taskq.queue_counters for one queue, or every queue when null, by name. */
  queueCounters(queue: string | null): Promise<CountersRow[]> {
    return this.call<CountersRow>(q.QueueCounters, [queue]);
  }

  /** Adds a tally of throttled verdicts to the current minute's fleet-wide counts. */
  async throttledAdd(tally: readonly { queue: string; reason: string; count: number }[]): Promise<void> {
    if (tally.length === 0) return;
    await this.db.query(q.ThrottledAdd, [
      tally.map((t) => t.queue),
      tally.map((t) => t.reason),
      tally.map((t) => t.count),
    ]);
  }

  /**
   * Applies a config file's throttles if its version owns the fleet's config throttles (newer than the
   * owner's, or the same with the same digest); otherwise changes nothing. Returns the owner afterwards.
   */
  async configThrottlesApply(
    version: number,
    digest: string,
    throttles: Record<string, { limit: number; period_ms: number }>,
    actor: string,
  ): Promise<{ applied: boolean; version: number; digest: string }> {
    const [row] = await this.call<{ result: { applied: boolean; version: number; digest: string } }>(
      q.ConfigThrottlesApply,
      [version, digest, JSON.stringify(throttles), actor],
    );
    if (!row) throw new Error("apply_config_throttles returned nothing");
    return row.result;
  }

  /**
   * Runs `fn` against this store inside one transaction that is always rolled back, and returns what
   * it returned: a verb run there validates, locks and answers exactly as it would, and writes nothing
   * (no settings, no audit row, no notification: Postgres sends those at commit). Watchers are not
   * told, so no limiter state is touched either. A dry run learns a verb's proposed settings this way.
   */
  async rehearse<T>(fn: (store: QueueStore) => Promise<T>): Promise<T> {
    let result: { value: T } | undefined;
    try {
      await this.db.transaction(async (tx) => {
        result = { value: await fn(new QueueStore(tx)) };
        throw ROLLBACK;
      });
    } catch (err) {
      if (err !== ROLLBACK || !result) throw err;
    }
    return (result as { value: T }).value;
  }

  private async settings(sql: (typeof q)[keyof typeof q], params: unknown[]): Promise<QueueSettings> {
    // Every settings verb takes the queue's name first.
    const changed = this.#watchers.map((w) => w(params[0] as string));
    const [row] = await this.call<{ settings: unknown }>(sql, params);
    if (!row) throw new Error("verb returned nothing");
    for (const after of changed) await after();
    return parseQueueSettings(params[0] as string, row.settings);
  }

  private async call<R extends object>(sql: (typeof q)[keyof typeof q], params: unknown[]): Promise<R[]> {
    try {
      return await this.db.query<R>(sql, params);
    } catch (err) {
      throw fromDbError(err);
    }
  }
}

/**
 * invalid_parameter_value (22023) names the field first; 55000 is a refused precondition; no_data_found
 * (P0002) a queue never seen.
 */
export function fromDbError(err: unknown): unknown {
  const e = err as { code?: string; message?: string };
  if (e?.code === "P0002" && e.message) return new NotFoundError(e.message);
  if (e?.code === "22023" && e.message) {
    const space = e.message.indexOf(" ");
    return new InvalidArgumentError(e.message.slice(0, space), e.message.slice(space + 1));
  }
  if (e?.code === "55000" && e.message) return new FailedPreconditionError(e.message);
  return err;
}
