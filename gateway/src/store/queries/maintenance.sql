-- Maintenance queries, run by the elected leader. Each works in pages ($1 rows at most) so one
-- backlog can never stall a tick, and takes an optional explicit "now" ($2).

-- name: LeasesRescue
-- plan: each call
-- Expired leases: back to the queue at once (the lease already waited), failed when attempts are
-- spent, cancelled when a cancel was requested.
with expired as (
  select id from taskq.live_jobs
  where state = 'running' and lease_deadline < coalesce($2::timestamptz, now())
  order by lease_deadline limit $1::int
  for update skip locked
), rescued as (
update taskq.live_jobs j set
  state = case when j.cancel_requested then 'cancelled' when j.attempt >= j.max_attempts then 'failed' else 'queued' end,
  outcome = case when j.cancel_requested then 'cancelled' when j.attempt >= j.max_attempts then 'lease_expired' end,
  finished_at = case when j.cancel_requested or j.attempt >= j.max_attempts then coalesce($2::timestamptz, now()) end,
  last_error = jsonb_build_object('type', 'LeaseExpired', 'message',
    'lease of attempt ' || j.attempt || ' expired without a settle', 'retryable', true),
  lease_deadline = null,
  worker_id = null
from expired where j.id = expired.id
returning j.id, j.attempt, j.queue, j.state, j.last_error
), lost as (
  -- Each expired lease is an attempt lost, kept with the worker and claim time the job had before this
  -- update (taskq.job_attempts), with the instance id of the leader that ended it ($3): the gateway that
  -- held the lease is not known here.
  insert into taskq.job_attempts (job_id, attempt, worker_id, gateway, claimed_at, finished_at, outcome, error,
    duration_ms)
  select r.id, r.attempt, j.worker_id, $3::text, j.started_at, coalesce($2::timestamptz, now()), 'lease_expired', r.last_error,
    (extract(epoch from (coalesce($2::timestamptz, now()) - j.started_at)) * 1000)::bigint
  from rescued r join taskq.live_jobs j on j.id = r.id
  on conflict do nothing
), probes as (
  -- A half-open breaker's probe whose lease expired re-opens it (a failure: the downstream hung).
  select sum(taskq.breaker_probe_lost(r.queue, r.id, r.attempt, $2::timestamptz)) as n
  from rescued r join taskq.queues q on q.name = r.queue and q.breaker_probe_job_id = r.id
)
select r.id::text as id, r.queue, r.state from rescued r left join probes on true;

-- name: JobsPromote
-- plan: each call
-- Scheduled jobs whose time has come become ready.
with due as (
  select id from taskq.live_jobs
  where state = 'scheduled' and run_at <= coalesce($2::timestamptz, now())
  order by run_at limit $1::int
  for update skip locked
)
update taskq.live_jobs j set state = 'queued' from due where j.id = due.id
returning j.queue;

-- name: JobsExpireTtl
-- plan: each call
-- Waiting jobs past their TTL are cancelled with outcome expired_ttl; running jobs are never touched.
with expired as (
  select id from taskq.live_jobs
  where expires_at <= coalesce($2::timestamptz, now()) and state in ('queued', 'scheduled')
  order by expires_at limit $1::int
  for update skip locked
)
update taskq.live_jobs j set state = 'cancelled', outcome = 'expired_ttl', finished_at = coalesce($2::timestamptz, now())
from expired where j.id = expired.id
returning j.id::text as id;

-- name: JobsMoveFinished
-- Finished jobs left in the live table (keyed jobs, lease expiries, TTLs, cancels) move to the history
-- ($1 rows at most): see taskq.move_finished_jobs.
select taskq.move_finished_jobs($1::int) as moved;

-- name: JobHistoryKeep
-- Records retention ($3 seconds), makes the coming days' history partitions and drops those past
-- retention; returns the rows it deleted one by one ($1 at most): see taskq.keep_job_history.
select taskq.keep_job_history($3::int, $2::timestamptz, $1::int) as deleted;

-- name: LiveJobsDeadRows
-- plan: each call
-- Dead row versions in the live jobs' table, as Postgres' statistics count them (taskq.live_jobs: each
-- job leaves two, its claim's old version and its deletion), and the seconds since it was last vacuumed,
-- by autovacuum or anyone (null: never).
select coalesce(pg_stat_get_dead_tuples(t.oid), 0)::text as dead,
  extract(epoch from now() - greatest(pg_stat_get_last_vacuum_time(t.oid),
    pg_stat_get_last_autovacuum_time(t.oid)))::float8 as since_vacuum_s
from (select 'taskq.live_jobs'::regclass::oid as oid) t;

-- name: LiveJobsVacuum
-- Skips the table, rather than waiting, while another vacuum holds it.
vacuum (skip_locked) taskq.live_jobs;

-- name: NotifyQueues
select pg_notify('taskq_jobs', q) from unnest($1::text[]) as q;

-- name: LeaderAcquire
-- Takes or renews the named lease when free, expired, or already ours; a row back means we lead.
insert into taskq.leaders as l (name, holder, expires_at)
values ($1::text, $2::text, coalesce($4::timestamptz, now()) + $3::int * interval '1 millisecond')
on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
where l.holder = excluded.holder or l.expires_at < coalesce($4::timestamptz, now())
returning holder;

-- name: LeaderRelease
delete from taskq.leaders where name = $1::text and holder = $2::text;

-- name: JobLevels
-- plan: each call
-- Waiting and running jobs per queue and state, for metrics (partial indexes keep this cheap).
select queue, state, count(*)::int as count from taskq.live_jobs
where state in ('scheduled', 'queued', 'running') group by queue, state;

-- name: ThrottledPrune
-- Throttled-verdict minutes older than two hours (queue_counters reads the last one).
delete from taskq.queue_throttled t where t.ctid = any(array(
  select t2.ctid from taskq.queue_throttled t2
  where t2.minute < coalesce($2::timestamptz, now()) - interval '2 hours' limit $1::int))
returning 1;

-- name: BreakerSamplesPrune
-- Rolling-window samples older than their queue's largest breaker window (all of them once the queue
-- has no rate or latency trigger).
delete from taskq.breaker_samples s where s.ctid = any(array(
  select s2.ctid from taskq.breaker_samples s2 left join taskq.queues q on q.name = s2.queue
  where s2.at < coalesce($2::timestamptz, now())
    - coalesce(greatest(q.breaker_rate_window_seconds, q.breaker_latency_window_seconds), 0) * interval '1 second'
  limit $1::int))
returning 1;

-- name: AdaptConcurrency
-- Every gateway, every tick: one caller at a time decides, the others return 0 at once.
select taskq.adapt_concurrency($1::timestamptz) as changed;
