-- A dry run's reads of a queue's recent history (gateway/src/dry-run): times as ms since the epoch.

-- name: DryRunNow
select floor(extract(epoch from now()) * 1000)::float8 as now_ms;

-- name: DryRunHistory
-- The queue's jobs a replay of the window [$2, $3) needs: every one ready before its end that had not
-- finished by its start and ran (or is still queued), oldest ready first, at most $4 rows. Each branch
-- reads an index: the history by (queue, finished_at), live jobs by their state's index of the queue.
-- A job's ready time is its run_at (enqueue time, a delay's end, or a retry's backoff end); a job that
-- finished without running (cancelled, expired) took no place and is left out. failed: its last attempt
-- failed (what an adaptive limit's replay reads).
select r.id::text, r.priority::int, r.flow_key,
  floor(extract(epoch from r.ready) * 1000)::float8 as ready_ms,
  floor(extract(epoch from r.started_at) * 1000)::float8 as started_ms,
  floor(extract(epoch from r.finished_at) * 1000)::float8 as finished_ms, r.failed
from (
  select h.id, h.priority, h.flow_key, greatest(h.run_at, h.enqueued_at) as ready, h.started_at, h.finished_at,
    h.state = 'failed' as failed
  from taskq.job_history h
  where h.queue = $1::text and h.finished_at >= $2::timestamptz and h.finished_at >= taskq.retained_since()
    and h.started_at is not null
  union all
  select j.id, j.priority, j.flow_key, greatest(j.run_at, j.enqueued_at), j.started_at, j.finished_at, false
  from taskq.live_jobs j
  where j.queue = $1::text and j.state = 'running'
  union all
  select j.id, j.priority, j.flow_key, greatest(j.run_at, j.enqueued_at), null, null, false
  from taskq.live_jobs j
  where j.queue = $1::text and j.state = 'queued'
  union all
  select j.id, j.priority, j.flow_key, greatest(j.run_at, j.enqueued_at), j.started_at, j.finished_at,
    j.state = 'failed'
  from taskq.live_jobs j
  where j.state in ('succeeded', 'failed', 'cancelled') and j.finished_at >= $2::timestamptz
    and j.queue = $1::text and j.started_at is not null
) r
where r.ready < $3::timestamptz
order by r.ready, r.id
limit $4::int;
