-- The console's reads (SQL functions in sql/): timestamps as ms since the epoch, bigints as text.

-- name: JobsList
select id::text, state, priority::int, attempt, max_attempts, flow_key, content_type, payload_bytes,
  floor(extract(epoch from enqueued_at) * 1000)::float8 as enqueued_ms,
  floor(extract(epoch from run_at) * 1000)::float8 as run_ms,
  floor(extract(epoch from started_at) * 1000)::float8 as started_ms,
  floor(extract(epoch from finished_at) * 1000)::float8 as finished_ms,
  outcome, last_error, worker_id
from taskq.list_jobs($1::text, $2::text, taskq.arg_int('limit', $3::numeric), taskq.arg_bigint('before_id', $4::numeric));

-- name: JobsCount
select taskq.count_jobs($1::text, $2::text)::text as total;

-- name: JobEventsList
select id::text, event_type, data, floor(extract(epoch from created_at) * 1000)::float8 as created_ms
from taskq.list_job_events(taskq.arg_bigint('job_id', $1::numeric));

-- name: BreakerEventsList
select event_type, job_id::text, actor, data, floor(extract(epoch from created_at) * 1000)::float8 as created_ms
from taskq.list_breaker_events($1::text, taskq.arg_int('limit', $2::numeric));

-- name: QueueActivity
select floor(extract(epoch from minute) * 1000)::float8 as minute_ms, claimed::text, succeeded::text,
  failed::text, cancelled::text, avg_run_ms, max_run_ms, throttled
from taskq.queue_activity($1::text, taskq.arg_int('minutes', $2::numeric));
