import * as v from "valibot";

// What the SQL verbs keep and return (taskq.queue_settings, taskq.breaker_settings, taskq.flow_limits),
// checked when read back: the verbs validate what they write, but a row edited by hand, or a function
// changed by a later migration, must fail naming the queue and field, not flow on into the gates.
// Only the shape and the bounds every gate relies on are checked; the verbs own the exact ranges.

const count = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
const positive = v.pipe(v.number(), v.safeInteger(), v.minValue(1));
const optionalPositive = v.nullable(positive);
/** A timestamptz inside jsonb: ISO text. */
const timestamp = v.nullable(v.string());

export const BreakerStateSchema = v.picklist(["closed", "open", "half_open"]);
export type BreakerState = v.InferOutput<typeof BreakerStateSchema>;

export const ThrottleSourceSchema = v.picklist(["config", "console"]);

/** The breaker's config and live state (taskq.breaker_settings). */
export const BreakerSettingsSchema = v.object({
  failure_threshold: positive,
  cooldown_seconds: positive,
  half_open_successes: positive,
  rate: v.nullable(
    v.object({
      failure_ratio: v.pipe(v.number(), v.gtValue(0), v.maxValue(1)),
      window_seconds: positive,
      min_volume: positive,
    }),
  ),
  latency: v.nullable(v.object({ threshold_ms: positive, window_seconds: positive, min_volume: positive })),
  state: BreakerStateSchema,
  failure_streak: count,
  opened_total: count,
  tripped_at: timestamp,
  /** bigint as text. */
  probe_job_id: v.nullable(v.pipe(v.string(), v.digits())),
  probe_successes: count,
});
export type BreakerSettings = v.InferOutput<typeof BreakerSettingsSchema>;

/** The adaptive limit (taskq.adaptive_settings); its value now is the queue's max_running. */
export const AdaptiveSettingsSchema = v.object({
  min: positive,
  max: positive,
  target_latency_ms: positive,
  /** The operator's max_running, restored when adaptive is turned off; null: no cap. */
  fixed_max_running: optionalPositive,
  slow_start: v.boolean(),
  decided_at: timestamp,
  reason: v.nullable(v.string()),
});
export type AdaptiveSettings = v.InferOutput<typeof AdaptiveSettingsSchema>;

/** A queue's flow-control settings as the SQL verbs return them (taskq.queue_settings). */
export const QueueSettingsSchema = v.object({
  paused: v.boolean(),
  max_running: optionalPositive,
  throttle: v.nullable(v.object({ limit: positive, period_ms: positive, source: ThrottleSourceSchema })),
  /** The throttle's version, bumped by every change or removal (queuesGet only; see taskq.bump_throttle_version). */
  throttle_version: v.optional(v.nullable(count)),
  claim_rate_per_minute: optionalPositive,
  claim_burst: optionalPositive,
  ramp_seconds: optionalPositive,
  ramp_started_at: timestamp,
  priority_aging_seconds: optionalPositive,
  default_ttl_seconds: optionalPositive,
  notify_mode: v.picklist(["always", "on_idle_transition"]),
  /** null when the queue has no breaker. */
  breaker: v.nullable(BreakerSettingsSchema),
  /** null when the queue's max_running is not adaptive. */
  adaptive: v.nullable(AdaptiveSettingsSchema),
});
export type QueueSettings = v.InferOutput<typeof QueueSettingsSchema>;

/** A flow key's limit as set_flow_limit returns it. */
export const FlowLimitSchema = v.object({ rate_per_minute: positive, burst: positive });
export type FlowLimit = v.InferOutput<typeof FlowLimitSchema>;

/** One row of taskq.flow_limits, as the limiter uses it. */
export const FlowLimitRowSchema = v.pipe(
  v.object({ flow_key: v.string(), rate_per_minute: positive, burst: positive }),
  v.transform((r) => ({ flowKey: r.flow_key, ratePerMinute: r.rate_per_minute, burst: r.burst })),
);
export type FlowLimitRow = v.InferOutput<typeof FlowLimitRowSchema>;

/** Stored settings that do not have the shape the gateway relies on. */
export class StoredSettingsError extends Error {
  override name = "StoredSettingsError";
}

/** Parses what Postgres returned for `owner` (e.g. `queue "mail"`), or throws naming it and the field. */
export function parseStored<S extends v.GenericSchema>(
  schema: S,
  owner: string,
  raw: unknown,
): v.InferOutput<S> {
  const result = v.safeParse(schema, raw);
  if (result.success) return result.output;
  const [issue] = result.issues;
  const field = v.getDotPath(issue);
  throw new StoredSettingsError(
    `${owner} has malformed stored settings${field ? ` at ${field}` : ""}: ${issue.message}`,
  );
}

export const parseQueueSettings = (queue: string, raw: unknown): QueueSettings =>
  parseStored(QueueSettingsSchema, `queue "${queue}"`, raw);
