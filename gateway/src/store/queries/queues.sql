-- Queue profiles and operator verbs. The verbs are SQL functions (sql/) so psql is a
-- first-class client; these statements only call them and read what they keep.

-- name: QueuesGet
-- With the throttle's version, which the claim path hands the limiter (see taskq.bump_throttle_version).
select name, taskq.queue_settings(q) || jsonb_build_object('throttle_version', q.throttle_version) as settings
from taskq.queues q where name = any($1::text[]);

-- name: QueuesList
-- Every known queue (taskq.known_queues), one without settings with every gate off.
select k.name, taskq.queue_settings(taskq.queue_row(k.name)) as settings
from taskq.known_queues k order by k.name;

-- name: QueueGet
-- One known queue as QueuesList shows it; no row for a queue never seen.
select taskq.queue_settings(taskq.queue_row(k.name)) as settings from taskq.known_queues k where k.name = $1::text;

-- name: QueuesNote
select taskq.note_queues($1::text[]);

-- name: QueueEnsure
select taskq.ensure_queue($1::text, $2::jsonb, $3::text) as settings;

-- name: QueuePause
select taskq.pause_queue($1::text, $2::text) as settings;

-- name: QueueResume
select taskq.resume_queue($1::text, $2::text) as settings;

-- name: QueueClear
select taskq.clear_queue($1::text, $2::text)::text as cleared;

-- name: QueueSetConcurrency
select taskq.set_queue_concurrency($1::text, taskq.arg_int('max_running', $2::numeric), $3::text) as settings;

-- name: QueueSetAdaptive
select taskq.set_adaptive_concurrency($1::text, taskq.arg_int('min', $2::numeric), taskq.arg_int('max', $3::numeric),
  taskq.arg_int('target_latency_ms', $4::numeric), $5::text) as settings;

-- name: AdaptiveChanges
select id::text, floor(extract(epoch from at) * 1000)::float8 as at_ms, limit_before, limit_after, reason, figures
from taskq.list_adaptive_changes($1::text, taskq.arg_int('limit', $2::numeric));

-- name: QueueSetThrottle
select taskq.set_queue_throttle($1::text, taskq.arg_int('limit', $2::numeric), taskq.arg_int('period_ms', $3::numeric), $4::text, $5::text) as settings;

-- name: QueueDeleteThrottle
select taskq.delete_queue_throttle($1::text, $2::text, $3::text) as settings;

-- name: QueueSetAging
select taskq.set_priority_aging($1::text, taskq.arg_int('aging_seconds', $2::numeric), $3::text) as settings;

-- name: FlowLimitSet
select taskq.set_flow_limit($1::text, taskq.arg_int('rate_per_minute', $2::numeric), taskq.arg_int('burst', $3::numeric), $4::text) as limit;

-- name: FlowLimitsList
select flow_key, rate_per_minute, burst from taskq.flow_limits order by flow_key;

-- name: BreakerConfig
select taskq.set_breaker_config($1::text, taskq.arg_int('failure_threshold', $2::numeric), taskq.arg_int('cooldown_seconds', $3::numeric),
  taskq.arg_int('half_open_successes', $4::numeric), $5::text) as settings;

-- name: BreakerRate
select taskq.set_breaker_rate($1::text, $2::float8, taskq.arg_int('window_seconds', $3::numeric), taskq.arg_int('min_volume', $4::numeric),
  $5::text) as settings;

-- name: BreakerLatency
select taskq.set_breaker_latency($1::text, taskq.arg_int('threshold_ms', $2::numeric), taskq.arg_int('window_seconds', $3::numeric),
  taskq.arg_int('min_volume', $4::numeric), $5::text) as settings;

-- name: BreakerTrip
select taskq.trip_breaker($1::text, $2::text) as settings;

-- name: BreakerClose
select taskq.close_breaker($1::text, $2::text) as settings;

-- name: AuditList
select id::text, event_type, actor, detail, floor(extract(epoch from created_at) * 1000)::float8 as created_ms
from taskq.list_queue_audit($1::text, taskq.arg_int('limit', $2::numeric), taskq.arg_bigint('before_id', $3::numeric));

-- name: AuditPrune
select taskq.prune_queue_audit(taskq.arg_int('older_than_hours', $1::numeric))::text as removed;

-- name: QueueHealth
select queue, verdict, detail from taskq.queue_health($1::text);

-- name: ThrottledAdd
-- Adds one gateway's tally of throttled verdicts (queue, reason, count) to the current minute.
insert into taskq.queue_throttled as t (queue, minute, reason, count)
select u.queue, date_trunc('minute', now()), u.reason, u.n
from unnest($1::text[], $2::text[], $3::bigint[]) as u(queue, reason, n)
on conflict (queue, minute, reason) do update set count = t.count + excluded.count;

-- name: QueueCounters
select queue, queued::text, scheduled::text, running::text, succeeded_last_minute::text,
  failed_last_minute::text, succeeded_last_hour::text, failed_last_hour::text,
  oldest_ready_seconds::float8 as oldest_ready_seconds, throttled_last_hour
from taskq.queue_counters where $1::text is null or queue = $1::text order by queue;

-- name: ConfigThrottlesApply
select taskq.apply_config_throttles($1::bigint, $2::text, $3::jsonb, $4::text) as result;
