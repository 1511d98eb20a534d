-- Explain's reads (AdminService.ExplainJob / ExplainQueue): why a job is not running yet. Reads only,
-- none on the hot path (each planned at its call); `now` is explicit ($… timestamptz) so tests pin it.
-- Times come back as ms since the epoch. A job by id is read through taskq.jobs (it may be finished);
-- reads of waiting and running jobs name taskq.live_jobs, as the job path does (through the view they
-- planned the history too: explaining the queue at 100,000 waiting took 60 ms instead of 17).

-- name: ExplainJob
-- plan: each call
select id::text, queue, state, priority::int, flow_key, attempt, attempt_floor, max_attempts,
  floor(extract(epoch from run_at) * 1000)::float8 as run_ms,
  floor(extract(epoch from expires_at) * 1000)::float8 as expires_ms,
  floor(extract(epoch from started_at) * 1000)::float8 as started_ms,
  floor(extract(epoch from finished_at) * 1000)::float8 as finished_ms,
  floor(extract(epoch from lease_deadline) * 1000)::float8 as lease_deadline_ms,
  worker_id, outcome, last_error
from taskq.jobs where id = $1::bigint;

-- name: ExplainNextJob
-- plan: each call
-- The job a claim of the queue would hand out next: its best ready job in claim order (the ready
-- index's order), else its first scheduled one.
select id::text from (
  (select j.id, 0 as k from taskq.live_jobs j
   where j.state = 'queued' and j.queue = $1::text and (j.expires_at is null or j.expires_at > $2::timestamptz)
   order by j.priority desc, j.run_at, j.id
   limit 1)
  union all
  (select j.id, 1 from taskq.live_jobs j where j.state = 'scheduled' and j.queue = $1::text
   order by j.run_at, j.id limit 1)
) x order by k limit 1;

-- name: ExplainNextJobAged
-- plan: each call
-- As ExplainNextJob for a queue with priority aging $3 (seconds): the best by aged priority, as
-- taskq.jobs_claim ranks them (a sort of the queue's ready jobs).
select id::text from (
  (select j.id, 0 as k from taskq.live_jobs j
   where j.state = 'queued' and j.queue = $1::text and (j.expires_at is null or j.expires_at > $2::timestamptz)
   order by j.priority + floor(extract(epoch from ($2::timestamptz - j.run_at)) / $3::integer) desc, j.run_at, j.id
   limit 1)
  union all
  (select j.id, 1 from taskq.live_jobs j where j.state = 'scheduled' and j.queue = $1::text
   order by j.run_at, j.id limit 1)
) x order by k limit 1;

-- name: ExplainAhead
-- plan: each call
-- Ready jobs a claim of the queue hands out before one of priority $2 waiting since $3 (id $4): with
-- aging $6, by aged priority as taskq.jobs_claim ranks them.
select count(*)::int as ahead from taskq.live_jobs j
where j.state = 'queued' and j.queue = $1::text and j.id <> $4::bigint
  and (j.expires_at is null or j.expires_at > $5::timestamptz)
  and case when $6::integer is null then
        j.priority > $2::integer or (j.priority = $2::integer and (j.run_at, j.id) < ($3::timestamptz, $4::bigint))
      else
        (j.priority + floor(extract(epoch from ($5::timestamptz - j.run_at)) / $6::integer),
         -extract(epoch from j.run_at), -j.id)
        > ($2::integer + floor(extract(epoch from ($5::timestamptz - $3::timestamptz)) / $6::integer),
           -extract(epoch from $3::timestamptz), -$4::bigint)
      end;

-- name: ExplainQueue
-- plan: each call
-- The figures of the queue's Postgres gates and of who claims from it, at $2: running jobs against the
-- (ramped) cap and the oldest of them, who paused it and when, the breaker's last opening, the workers
-- polling it and the jobs they can hold (free slots asked for plus jobs held: concurrency + prefetch),
-- and over the last 5 minutes (taskq.queue_activity, the current minute so far included) its claims
-- and the average run time of its finished jobs.
with activity as (
  select coalesce(sum(a.claimed), 0)::int as claims,
    sum(a.avg_run_ms * (a.succeeded + a.failed)) / nullif(sum(a.succeeded + a.failed)
      filter (where a.avg_run_ms is not null), 0) as avg_run_ms
  from taskq.queue_activity($1::text, 5) a
), workers as (
  select w.worker_id, w.max_jobs, w.last_poll_at from taskq.workers w
  where $1::text = any(w.queues) and w.expires_at > $2::timestamptz
)
select
  (select count(*) from taskq.live_jobs j where j.queue = $1::text and j.state = 'running')::int as running,
  (select floor(extract(epoch from min(j.started_at)) * 1000)::float8 from taskq.live_jobs j
   where j.queue = $1::text and j.state = 'running') as oldest_running_ms,
  (select taskq.ramped_max_running(q.max_running, q.ramp_seconds, q.ramp_started_at, $2::timestamptz)
   from taskq.queues q where q.name = $1::text) as cap,
  (select jsonb_build_object('actor', a.actor, 'at_ms', floor(extract(epoch from a.created_at) * 1000))
   from taskq.queue_audit a where a.queue = $1::text and a.event_type = 'queue.pause'
   order by a.id desc limit 1) as paused_by,
  (select jsonb_build_object('event', e.event_type, 'actor', e.actor, 'job_id', e.job_id::text,
     'data', e.data, 'at_ms', floor(extract(epoch from e.created_at) * 1000))
   from taskq.list_breaker_events($1::text, 10) e
   where e.event_type in ('breaker_opened', 'breaker_reopened', 'queue.trip_breaker')
   order by e.created_at desc limit 1) as breaker_opened,
  (select count(*) from workers)::int as workers,
  (select floor(extract(epoch from max(w.last_poll_at)) * 1000)::float8 from workers w) as last_poll_ms,
  (select coalesce(sum(w.max_jobs), 0) from workers w)::int
    + (select count(*) from taskq.live_jobs j where j.state = 'running'
       and j.worker_id in (select w.worker_id from workers w))::int as capacity,
  (select claims from activity) as claims_5m,
  (select round(avg_run_ms)::float8 from activity) as avg_run_ms,
  floor(extract(epoch from (date_trunc('minute', now()) - 4 * interval '1 minute')) * 1000)::float8
    as claims_since_ms;

-- name: ExplainHeldBefore
-- plan: each call
-- Running jobs of worker $1 claimed before job $2: an SDK worker starts the jobs it holds in the order
-- it claimed them, so with that many ahead and its slots full, job $2 waits in its prefetch buffer.
select count(*)::int as before from taskq.live_jobs j, taskq.live_jobs mine
where mine.id = $2::bigint and j.state = 'running' and j.worker_id = $1::text and j.id <> mine.id
  and (j.started_at, j.id) < (mine.started_at, mine.id);

-- name: ExplainWorkerSlots
-- plan: each call
-- The job slots worker $1 reported in its polls (ClaimRequest.concurrency), on any gateway; null when
-- it reported none.
select max(w.concurrency) as concurrency from taskq.workers w
where w.worker_id = $1::text and w.expires_at > $2::timestamptz;
