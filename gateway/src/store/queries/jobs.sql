-- Job queries. Each takes an optional explicit "now" (null = the database's now()) so tests can pin the
-- clock; times always come from the database, never from a gateway's clock.
--
-- `-- plan: each call` marks a statement Postgres plans at every call. A prepared statement gets one
-- generic plan per connection from about its sixth call, made from the statistics of that moment and
-- kept until the table is next analyzed: made while taskq.jobs was nearly empty, a heartbeat, a lookup
-- of one job, every statement below that names jobs by id, read the whole table (40,011 rows to extend
-- 10 leases). Planned at each call, a statement sees the table's current size (0.1-0.9 ms of planning,
-- off the claim and settle path, whose functions pin their plans instead: see taskq.jobs_claim).

-- name: JobsEnqueue
-- Inserts a batch in input order and notifies the queues that got a ready job: taskq.jobs_enqueue,
-- planned once per connection.
select * from taskq.jobs_enqueue($1::text[], $2::bytea[], $3::text[], $4::int[], $5::text[],
  $6::timestamptz[], $7::bigint[], $8::int[], $9::int[], $10::text[], $11::jsonb[], $12::timestamptz, true);

-- name: JobsEnqueueClaim
-- JobsEnqueue, then JobsClaim for polls parked on this gateway ($13-$17 as JobsClaim's $1-$4 and $6), in
-- one statement: see taskq.jobs_enqueue_claim.
select * from taskq.jobs_enqueue_claim($1::text[], $2::bytea[], $3::text[], $4::int[], $5::text[],
  $6::timestamptz[], $7::bigint[], $8::int[], $9::int[], $10::text[], $11::jsonb[], $12::timestamptz,
  $13::text[], $14::int[], $15::int[], $16::text[], $17::text[]);

-- name: JobsByIdempotencyKey
-- plan: each call
select id::text as id, queue, idempotency_key
from taskq.jobs
where (queue, idempotency_key) in (select * from unnest($1::text[], $2::text[]));

-- name: JobsClaim
-- Ready, unexpired jobs of the queues in $1 for one or more polls ($2 limits, $3 lease ms, $4 worker
-- ids: one entry per poll), best priority first, then oldest; flow keys in $6 are skipped. Queues that
-- pause, the breaker or max_running decline come back as verdict rows. See taskq.jobs_claim.
select * from taskq.jobs_claim($1::text[], $2::int[], $3::int[], $4::text[], $5::timestamptz, $6::text[]);

-- name: JobsRelease
-- plan: each call
-- Puts back claimed jobs whose response never reached the worker. The attempt stays burned (fencing),
-- but it does not count against max_attempts. Here and below, jobs named by id are joined on id alone
-- and tested `(j.state = 'running') is true`: one primary-key probe per id, never a read of every
-- running job nor every row matched against every id (see taskq.jobs_settle).
with input as (select * from unnest($1::bigint[], $2::int[]) as t(id, attempt)),
upd as (
  update taskq.live_jobs j set state = 'queued', max_attempts = j.max_attempts + 1, lease_deadline = null,
    worker_id = null, started_at = null
  from input i where j.id = i.id and j.attempt = i.attempt and (j.state = 'running') is true
  returning j.id, j.attempt, j.queue
), released as (
  -- Each is an attempt released (taskq.job_attempts), so the burned attempt number is accounted for. It
  -- never ran: no duration. $3: this gateway's instance id.
  insert into taskq.job_attempts (job_id, attempt, worker_id, gateway, claimed_at, finished_at, outcome, error)
  select u.id, u.attempt, j.worker_id, $3::text, j.started_at, now(), 'released',
    jsonb_build_object('type', 'Undelivered', 'message', 'the claim''s answer never reached the worker',
      'retryable', true)
  from upd u join taskq.live_jobs j on j.id = u.id
  on conflict do nothing
)
select distinct queue from upd;

-- name: JobsReadyFlowKeys
-- plan: each call
-- Blocked flow keys ($2) that have ready jobs in these queues ($1), for FLOW_KEY verdicts. Queues with
-- any ready job under another key are left out: they are not blocked.
select distinct j.queue, j.flow_key from taskq.live_jobs j
where j.state = 'queued' and j.queue = any($1::text[]) and j.flow_key = any($2::text[])
  and not exists (
    select 1 from taskq.live_jobs o where o.state = 'queued' and o.queue = j.queue
      and (o.flow_key is null or o.flow_key <> all($2::text[])));

-- name: JobsUnclaim
-- plan: each call
-- Undoes claims that were never handed to anyone (a flow key over its limit): the attempt goes back
-- too, since no worker ever held it.
with input as (select * from unnest($1::bigint[], $2::int[]) as t(id, attempt))
update taskq.live_jobs j set state = 'queued', attempt = j.attempt - 1, lease_deadline = null, lease_ms = null,
  worker_id = null, started_at = null
from input i where j.id = i.id and j.attempt = i.attempt and (j.state = 'running') is true
returning j.id::text as id;

-- name: JobsSettle
-- Applies a batch of settlements to the leases they name (taskq.jobs_settle, planned once per
-- connection). Rows not returned were not running under that attempt: the caller classifies
-- them with JobsSettleStatus.
select * from taskq.jobs_settle($1::bigint[], $2::int[], $3::text[], $4::bytea[], $5::jsonb[], $6::int[],
                                $7::timestamptz, $8::int[], $9::boolean, $10::text);

-- name: JobsSettleStatus
-- plan: each call
-- The current state of jobs whose settle did not apply, to tell a repeat from a lost lease.
select id::text as id, attempt, state, settled_attempt, settled_kind, run_at
from taskq.jobs where id = any($1::bigint[]);

-- name: LeasesExtend
-- plan: each call
with input as (select * from unnest($1::bigint[], $2::int[], $3::int[]) as t(id, attempt, extend_ms))
update taskq.live_jobs j set
  lease_deadline = coalesce($4::timestamptz, now()) + coalesce(i.extend_ms, j.lease_ms) * interval '1 millisecond'
from input i
where j.id = i.id and j.attempt = i.attempt and (j.state = 'running') is true
returning j.id::text as id, j.attempt, j.lease_deadline, j.cancel_requested;

-- name: JobGet
-- plan: each call
select id::text as id, queue, state, attempt, max_attempts, priority, flow_key, payload, content_type, headers,
       enqueued_at, run_at, started_at, finished_at, lease_deadline, expires_at, outcome, result, last_error,
       cancel_requested, worker_id
from taskq.jobs where id = $1::bigint;

-- name: JobAttempts
-- plan: each call
-- The attempts of a job that did not succeed, oldest first: one probe of taskq.job_attempts' primary key.
select attempt, worker_id, gateway, claimed_at, finished_at, outcome, error, duration_ms::float8 as duration_ms
from taskq.job_attempts where job_id = $1::bigint order by attempt;

-- name: JobQueues
-- plan: each call
-- The queues of these jobs (unknown ids are left out), to check a queue-scoped token's settle or heartbeat.
select distinct queue from taskq.jobs where id = any($1::bigint[]);

-- name: JobCancel
-- plan: each call
-- A waiting job is cancelled now; a running one is flagged and told at its next heartbeat. A cancelled
-- job leaves the live table at the next maintenance tick (taskq.move_finished_jobs). A finished job is
-- found, and left as it is.
with live as (
  update taskq.live_jobs set
    state = case when state in ('queued', 'scheduled') then 'cancelled' else state end,
    outcome = case when state in ('queued', 'scheduled') then 'cancelled' else outcome end,
    finished_at = case when state in ('queued', 'scheduled') then coalesce($3::timestamptz, now()) else finished_at end,
    cancel_requested = cancel_requested or state = 'running',
    last_error = case when state in ('queued', 'scheduled', 'running') and $2::text <> ''
      then jsonb_build_object('type', 'Cancelled', 'message', $2::text, 'retryable', false) else last_error end
  where id = $1::bigint
  returning id
)
select id::text as id from live
union all
select h.id::text from taskq.job_history h where h.id = $1::bigint and h.finished_at >= taskq.retained_since();
