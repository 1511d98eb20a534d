-- Job queries. Each takes an optional explicit "now" (null = the database's now()) so tests can pin the
-- clock; times always come from the database, never from a gateway's clock.

-- name: JobsEnqueue
-- Inserts a batch in input order; a duplicate idempotency key inserts nothing (looked up afterwards).
-- Notifies each queue that got a ready job, in the same statement (one round trip per batch); a queue
-- with notify_mode on_idle_transition only when it had no ready job before (every part of the statement
-- reads the snapshot from before the insert), so a busy queue costs no NOTIFY per enqueue.
with input as (
  select *, coalesce(t.run_at, coalesce($12::timestamptz, now()) + coalesce(t.delay_ms, 0) * interval '1 millisecond') as due
  from unnest($1::text[], $2::bytea[], $3::text[], $4::int[], $5::text[], $6::timestamptz[], $7::bigint[],
              $8::int[], $9::int[], $10::text[], $11::jsonb[])
    with ordinality as t(queue, payload, content_type, priority, flow_key, run_at, delay_ms, ttl_seconds,
                         max_attempts, idempotency_key, headers, ord)
), ins as (
  insert into taskq.jobs (queue, state, priority, flow_key, payload, content_type, headers, max_attempts,
                          run_at, enqueued_at, expires_at, idempotency_key)
  select input.queue,
         case when due > coalesce($12::timestamptz, now()) then 'scheduled' else 'queued' end,
         priority, flow_key, payload, content_type, headers, max_attempts, due,
         coalesce($12::timestamptz, now()),
         case when coalesce(nullif(ttl_seconds, 0), q.default_ttl_seconds) > 0
           then coalesce($12::timestamptz, now()) + coalesce(nullif(ttl_seconds, 0), q.default_ttl_seconds) * interval '1 second' end,
         idempotency_key
  from input left join taskq.queues q on q.name = input.queue order by ord
  on conflict (queue, idempotency_key) where idempotency_key is not null do nothing
  returning id, queue, state, idempotency_key
), woken as (
  select pg_notify('taskq_jobs', q.queue) from (
    select distinct ins.queue from ins left join taskq.queues p on p.name = ins.queue
    where ins.state = 'queued'
      and (p.notify_mode is distinct from 'on_idle_transition'
        or not exists (select 1 from taskq.jobs r where r.queue = ins.queue and r.state = 'queued'))
  ) q
)
select id::text as id, queue, idempotency_key, (select count(*) from woken) as notified
from ins order by id;

-- name: JobsByIdempotencyKey
select id::text as id, queue, idempotency_key
from taskq.jobs
where (queue, idempotency_key) in (select * from unnest($1::text[], $2::text[]));

-- name: JobsClaim
-- Up to $2 ready, unexpired jobs of ungated queues, best priority first, then oldest. Each queue is
-- picked on its own (LATERAL) so the pick is an index scan of jobs_ready_idx that stops after $2 rows;
-- `queue = any(...)` over the whole set read and sorted the entire backlog instead (measured: 7-19 ms
-- per claim at 20k queued, 0.7 ms this way). A queue a gate applies to (paused, capped, throttled...)
-- is skipped here, even before this gateway hears of the change, and is claimed through
-- taskq.claim_queue. Flow keys in $6 are skipped.
with picked as (
  select c.id from unnest($1::text[]) as q(name)
  cross join lateral (
    select j.id, j.priority, j.run_at from taskq.jobs j
    where j.state = 'queued' and j.queue = q.name
      and (j.expires_at is null or j.expires_at > coalesce($5::timestamptz, now()))
      and (j.flow_key is null or j.flow_key <> all($6::text[]))
    order by j.priority desc, j.run_at, j.id
    limit $2::int
    for update skip locked
  ) c
  where q.name <> all(array(select name from taskq.queues where name = any($1::text[]) and gated))
  order by c.priority desc, c.run_at, c.id
  limit $2::int
)
update taskq.jobs j set
  state = 'running',
  attempt = j.attempt + 1,
  started_at = coalesce($5::timestamptz, now()),
  lease_ms = $3::int,
  lease_deadline = coalesce($5::timestamptz, now()) + $3::int * interval '1 millisecond',
  worker_id = $4::text
where j.id = any(array(select id from picked))
returning j.id::text as id, j.queue, j.attempt, j.max_attempts, j.lease_deadline, j.payload, j.content_type,
          j.priority, j.flow_key, j.enqueued_at, j.headers;

-- name: JobsRelease
-- Puts back claimed jobs whose response never reached the worker. The attempt stays burned (fencing),
-- but it does not count against max_attempts.
with input as (select * from unnest($1::bigint[], $2::int[]) as t(id, attempt)),
upd as (
  update taskq.jobs j set state = 'queued', max_attempts = j.max_attempts + 1, lease_deadline = null,
    worker_id = null, started_at = null
  from input i where j.id = i.id and j.attempt = i.attempt and j.state = 'running'
  returning j.queue
)
select distinct queue from upd;

-- name: JobsClaimGated
select * from taskq.claim_queue($1::text, $2::int, $3::int, $4::text, $5::timestamptz, $6::int, $7::int, $8::text[]);

-- name: JobsReadyFlowKeys
-- Blocked flow keys ($2) that have ready jobs in these queues ($1), for FLOW_KEY verdicts. Queues with
-- any ready job under another key are left out: they are not blocked.
select distinct j.queue, j.flow_key from taskq.jobs j
where j.state = 'queued' and j.queue = any($1::text[]) and j.flow_key = any($2::text[])
  and not exists (
    select 1 from taskq.jobs o where o.state = 'queued' and o.queue = j.queue
      and (o.flow_key is null or o.flow_key <> all($2::text[])));

-- name: JobsUnclaim
-- Undoes claims that were never handed to anyone (a flow key over its limit): the attempt goes back
-- too, since no worker ever held it.
with input as (select * from unnest($1::bigint[], $2::int[]) as t(id, attempt))
update taskq.jobs j set state = 'queued', attempt = j.attempt - 1, lease_deadline = null, lease_ms = null,
  worker_id = null, started_at = null
from input i where j.id = i.id and j.attempt = i.attempt and j.state = 'running'
returning j.id::text as id;

-- name: JobsSettle
-- Applies a batch of settlements to the leases they name. Rows not returned were not running under
-- that attempt: the caller classifies them with JobsSettleStatus.
-- delay_ms: null = not retryable; otherwise the wait before the next attempt when attempts remain.
-- Settles of queues with a breaker also feed it (taskq.breaker_record, one call per batch, only when
-- the batch has such a queue: a primary-key probe of taskq.queues per settled row is the whole cost
-- for other queues). latency_ms ($8) is the settle's duration, or started_at to now when absent.
-- Notifies each queue that got a job back to queued (a retry without delay), in the same statement.
with input as (
  select * from unnest($1::bigint[], $2::int[], $3::text[], $4::bytea[], $5::jsonb[], $6::int[], $8::int[])
    as t(id, attempt, kind, result, error, delay_ms, duration_ms)
), upd as (
update taskq.jobs j set
  state = case
    when i.kind = 'success' then 'succeeded'
    when i.kind = 'cancel' then 'cancelled'
    when i.delay_ms is null or j.attempt >= j.max_attempts then 'failed'
    when i.delay_ms > 0 then 'scheduled'
    else 'queued' end,
  run_at = case
    when i.kind = 'failure' and i.delay_ms is not null and j.attempt < j.max_attempts
    then coalesce($7::timestamptz, now()) + i.delay_ms * interval '1 millisecond'
    else j.run_at end,
  finished_at = case
    when i.kind = 'failure' and i.delay_ms is not null and j.attempt < j.max_attempts then null
    else coalesce($7::timestamptz, now()) end,
  outcome = case
    when i.kind = 'success' then 'succeeded'
    when i.kind = 'cancel' then 'cancelled'
    when i.delay_ms is null or j.attempt >= j.max_attempts then 'failed' end,
  result = i.result,
  last_error = coalesce(i.error, j.last_error),
  lease_deadline = null,
  settled_attempt = i.attempt,
  settled_kind = i.kind
from input i
-- The id array lets the planner look each row up by primary key instead of hashing every running job.
where j.id = any($1::bigint[]) and j.id = i.id and j.attempt = i.attempt and j.state = 'running'
returning j.id, j.attempt, j.queue, j.state, j.run_at, i.kind, i.duration_ms, j.started_at
), brk as (
  select taskq.breaker_record(array_agg(u.queue), array_agg(u.id), array_agg(u.attempt), array_agg(u.kind),
    array_agg(coalesce(u.duration_ms,
      (extract(epoch from (coalesce($7::timestamptz, now()) - u.started_at)) * 1000)::int)), $7::timestamptz) as transitions
  from upd u
  where exists (select 1 from taskq.queues q where q.name = u.queue and q.breaker_failure_threshold is not null)
  having count(*) > 0
), woken as (
  -- A failure retried with no delay is ready at once: wake parked polls on every gateway, as enqueue does.
  select count(pg_notify('taskq_jobs', r.queue)) as n from (select distinct u.queue from upd u where u.state = 'queued') r
)
select u.id::text as id, u.attempt, u.queue, u.state, u.run_at from upd u left join brk on true left join woken on true;

-- name: JobsSettleStatus
-- The current state of jobs whose settle did not apply, to tell a repeat from a lost lease.
select id::text as id, attempt, state, settled_attempt, settled_kind, run_at
from taskq.jobs where id = any($1::bigint[]);

-- name: LeasesExtend
with input as (select * from unnest($1::bigint[], $2::int[], $3::int[]) as t(id, attempt, extend_ms))
update taskq.jobs j set
  lease_deadline = coalesce($4::timestamptz, now()) + coalesce(i.extend_ms, j.lease_ms) * interval '1 millisecond'
from input i
where j.id = any($1::bigint[]) and j.id = i.id and j.attempt = i.attempt and j.state = 'running'
returning j.id::text as id, j.attempt, j.lease_deadline, j.cancel_requested;

-- name: JobGet
select id::text as id, queue, state, attempt, max_attempts, priority, flow_key, payload, content_type, headers,
       enqueued_at, run_at, started_at, finished_at, lease_deadline, expires_at, outcome, result, last_error,
       cancel_requested, worker_id
from taskq.jobs where id = $1::bigint;

-- name: JobQueues
-- The queues of these jobs (unknown ids are left out), to check a queue-scoped token's settle or heartbeat.
select distinct queue from taskq.jobs where id = any($1::bigint[]);

-- name: JobCancel
-- A waiting job is cancelled now; a running one is flagged and told at its next heartbeat.
update taskq.jobs set
  state = case when state in ('queued', 'scheduled') then 'cancelled' else state end,
  outcome = case when state in ('queued', 'scheduled') then 'cancelled' else outcome end,
  finished_at = case when state in ('queued', 'scheduled') then coalesce($3::timestamptz, now()) else finished_at end,
  cancel_requested = cancel_requested or state = 'running',
  last_error = case when state in ('queued', 'scheduled', 'running') and $2::text <> ''
    then jsonb_build_object('type', 'Cancelled', 'message', $2::text, 'retryable', false) else last_error end
where id = $1::bigint
returning id::text as id;
