-- Settling, like claiming (jobs_claim), as a function planned once per connection: as a bare prepared
-- statement Postgres re-planned it on every execution (about 0.8 ms of planning per settle batch).
-- It returns a retry's next run as epoch ms, and nothing for other outcomes: no date to parse per row.
-- A retry with no delay notifies its queue in the same statement, as an enqueue does.
--
-- A settle that finishes its job (success, cancel, a failure not retried) moves it from taskq.live_jobs
-- to taskq.job_history in this statement. p_keep_finished false (a gateway whose retentionSeconds is
-- 0): it only deletes it, one write per job. The rows it returns are the same. p_gateway: the instance
-- id of the settling gateway, kept with each attempt that did not succeed.
create or replace function taskq.jobs_settle(p_ids bigint[], p_attempts integer[], p_kinds text[], p_results bytea[],
                                             p_errors jsonb[], p_delays integer[], p_now timestamptz,
                                             p_durations integer[], p_keep_finished boolean, p_gateway text)
returns table (id text, attempt integer, queue text, state text, next_run_at_ms float8)
language plpgsql volatile
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
#variable_conflict use_column
declare
  v_taken integer;
begin
  -- Applies a batch of settlements to the leases they name. Rows not returned were not running under
  -- that attempt: the caller classifies them with JobsSettleStatus.
  -- delay_ms: null = not retryable; otherwise the wait before the next attempt when attempts remain.
  -- kind 'release': the worker never started the job (prefetch) and gives it back. It is ready again at
  -- once in its place (run_at kept), the attempt stays burned (fencing) but max_attempts grows by one so
  -- it does not count, as for a claim whose answer never reached its worker (JobsRelease); a cancel
  -- requested meanwhile cancels it, as when a lease expires.
  -- Settles of queues with a breaker also feed it (taskq.breaker_record, one call per batch, only when
  -- the batch has such a queue: one primary-key lookup of taskq.queues per distinct queue of the batch
  -- is the whole cost for other queues). latency (p_durations) is the settle's duration, or started_at
  -- to now when absent. Settles of queues with an adaptive limit are summed per queue into one
  -- taskq.adaptive_samples row per batch (successes and failures: a cancel or a release says nothing
  -- about the downstream), at the same cost of one lookup per distinct queue for other queues.
  -- The settled jobs are read by one scan of the primary key for all of p_ids (`j.id = any(p_ids)`),
  -- then matched to their input rows by a hash join. The state is tested as `(j.state = 'running') is
  -- true`, the same test in a form the planner cannot match to the partial index of running jobs: with
  -- `j.state = 'running'` it picked that index whenever its statistics said few jobs ran (as they do
  -- until autovacuum next analyzes) and read every running job at each settle (20,000 running: 19,650
  -- index entries and 5.7 ms for a 50-job settle). The plan is made once per connection from the
  -- statistics of that moment: made on a nearly empty table, it read every job at each settle (a
  -- sequential scan, or the whole primary key with sequential scans off), or matched every row against
  -- every input row in a nested loop, n² for n settles.
  -- With sequential scans, nested loops and merge joins off, the one plan left is that scan and a hash
  -- join, whatever the statistics (and jit off: see taskq.jobs_claim); every join here names its rows'
  -- ids as an array for that reason. It replaced a bitmap probe of the primary key per input row, which
  -- cost Postgres more per settled job.
  --
  -- Successes that finish their job, most settles, take a statement of their own: the one below sets
  -- up its update, its attempts and its wake-ups at every call, whether rows reach them or not, a fixed
  -- cost a one-job poll feels. This one deletes, keeps (or forgets
  -- the job's earlier attempts) and feeds the breaker only; what it leaves (a keyed job finishing in
  -- place, a lease no longer running) goes on to the statement below, where the jobs it took are gone
  -- and match nothing.
  if 'success' = all(p_kinds) then
    return query
    with del as (
      delete from taskq.live_jobs j
      using unnest(p_ids, p_attempts, p_results, p_durations) as i(id, attempt, result, duration_ms)
      where j.id = any(p_ids) and j.id = i.id and j.attempt = i.attempt and (j.state = 'running') is true
        and (not p_keep_finished or j.idempotency_key is null)
      returning j.*, i.result as settle_result, i.duration_ms
    ), kept as (
      insert into taskq.job_history (id, queue, state, priority, flow_key, payload, content_type, headers, attempt,
        max_attempts, run_at, enqueued_at, expires_at, lease_ms, lease_deadline, worker_id, started_at, finished_at,
        cancel_requested, settled_attempt, settled_kind, outcome, result, last_error, idempotency_key, attempt_floor)
      select d.id, d.queue, 'succeeded', d.priority, d.flow_key, d.payload, d.content_type, d.headers, d.attempt,
        d.max_attempts, d.run_at, d.enqueued_at, d.expires_at, d.lease_ms, null, d.worker_id, d.started_at,
        coalesce(p_now, now()), d.cancel_requested, d.attempt, 'success', 'succeeded', d.settle_result,
        d.last_error, d.idempotency_key, d.attempt_floor
      from del d where p_keep_finished
    ), forgotten as (
      delete from taskq.job_attempts a
      where not p_keep_finished and a.job_id = any(array(select d.id from del d where d.attempt > 1))
    ), adp as (
      insert into taskq.adaptive_samples (queue, at, settles, failures, latency_ms_sum)
      select u.queue, coalesce(p_now, now()), count(*), 0, sum(greatest(0, coalesce(u.duration_ms,
          (extract(epoch from (coalesce(p_now, now()) - u.started_at)) * 1000)::int)))
      from del u
      where u.queue = any(array(select q.name from taskq.queues q
        where q.name = any(array(select distinct d.queue from del d)) and q.adaptive_min is not null))
      group by u.queue
    ), brk as (
      select taskq.breaker_record(array_agg(u.queue), array_agg(u.id), array_agg(u.attempt),
        array_agg('success'::text), array_agg(coalesce(u.duration_ms,
          (extract(epoch from (coalesce(p_now, now()) - u.started_at)) * 1000)::int)), p_now) as transitions
      from del u
      where u.queue = any(array(select q.name from taskq.queues q
        where q.name = any(array(select distinct d.queue from del d)) and q.breaker_failure_threshold is not null))
      having count(*) > 0
    )
    select d.id::text, d.attempt, d.queue, 'succeeded'::text, null::float8 from del d left join brk on true;
    get diagnostics v_taken = row_count;
    if v_taken = cardinality(p_ids) then
      return;
    end if;
  end if;
  return query
  with input as (
    select * from unnest(p_ids, p_attempts, p_kinds, p_results, p_errors, p_delays, p_durations)
      as t(id, attempt, kind, result, error, delay_ms, duration_ms)
  ), del as (
  -- The settles that finish their job: it leaves the live table in this statement, for
  -- taskq.job_history below, or for nowhere when finished jobs are not kept. A delete and an insert
  -- cost Postgres less than an update, which leaves a dead row version and index entries in the live
  -- table until vacuum.
  delete from taskq.live_jobs j using input i
  where j.id = any(p_ids) and j.id = i.id and j.attempt = i.attempt and (j.state = 'running') is true
    and (i.kind in ('success', 'cancel') or (i.kind = 'release' and j.cancel_requested)
      or (i.kind = 'failure' and (i.delay_ms is null or j.attempt >= j.max_attempts)))
    and (not p_keep_finished or j.idempotency_key is null)
  returning j.*, case i.kind when 'success' then 'succeeded' when 'failure' then 'failed' else 'cancelled' end
      as finished_state,
    i.kind, i.attempt as settle_attempt, i.result as settle_result, i.error as settle_error, i.duration_ms
  ), upd as (
  -- The other settles (the input rows del did not take): a failure retried,
  -- a job given back, and a job with an idempotency key finishing while finished jobs are kept. That one
  -- finishes in place and moves to taskq.job_history at the next maintenance tick
  -- (taskq.move_finished_jobs), under the lock that keeps its key from being taken by an enqueue
  -- meanwhile (see taskq.jobs_enqueue).
  update taskq.live_jobs j set
    state = case
      when i.kind = 'release' then case when j.cancel_requested then 'cancelled' else 'queued' end
      when i.kind = 'success' then 'succeeded'
      when i.kind = 'cancel' then 'cancelled'
      when i.delay_ms is null or j.attempt >= j.max_attempts then 'failed'
      when i.delay_ms > 0 then 'scheduled'
      else 'queued' end,
    run_at = case
      when i.kind = 'failure' and i.delay_ms is not null and j.attempt < j.max_attempts
      then coalesce(p_now, now()) + i.delay_ms * interval '1 millisecond'
      else j.run_at end,
    finished_at = case
      when i.kind = 'failure' and i.delay_ms is not null and j.attempt < j.max_attempts then null
      when i.kind = 'release' and not j.cancel_requested then null
      else coalesce(p_now, now()) end,
    outcome = case
      when i.kind = 'release' then case when j.cancel_requested then 'cancelled' end
      when i.kind = 'success' then 'succeeded'
      when i.kind = 'cancel' then 'cancelled'
      when i.delay_ms is null or j.attempt >= j.max_attempts then 'failed' end,
    result = i.result,
    last_error = coalesce(i.error, j.last_error),
    lease_deadline = null,
    max_attempts = j.max_attempts + (i.kind = 'release')::int,
    worker_id = case when i.kind = 'release' then null else j.worker_id end,
    started_at = case when i.kind = 'release' then null else j.started_at end,
    settled_attempt = i.attempt,
    settled_kind = i.kind
  from input i
  where j.id = any(p_ids) and j.id = i.id and j.attempt = i.attempt and (j.state = 'running') is true
    and not exists (select 1 from del d where d.id = i.id)
  returning j.id, j.attempt, j.queue, j.state, j.run_at, i.kind, i.duration_ms, j.started_at
  ), kept as (
    insert into taskq.job_history (id, queue, state, priority, flow_key, payload, content_type, headers, attempt,
      max_attempts, run_at, enqueued_at, expires_at, lease_ms, lease_deadline, worker_id, started_at, finished_at,
      cancel_requested, settled_attempt, settled_kind, outcome, result, last_error, idempotency_key, attempt_floor)
    select d.id, d.queue, d.finished_state, d.priority, d.flow_key, d.payload, d.content_type, d.headers, d.attempt,
      d.max_attempts + (d.kind = 'release')::int, d.run_at, d.enqueued_at, d.expires_at, d.lease_ms, null,
      case when d.kind = 'release' then null else d.worker_id end,
      case when d.kind = 'release' then null else d.started_at end,
      coalesce(p_now, now()), d.cancel_requested, d.settle_attempt, d.kind, d.finished_state, d.settle_result,
      coalesce(d.settle_error, d.last_error), d.idempotency_key, d.attempt_floor
    from del d where p_keep_finished
  ), settled as (
    select * from upd
    union all
    select d.id, d.attempt, d.queue, d.finished_state, d.run_at, d.kind, d.duration_ms, d.started_at from del d
  ), attempts as (
    -- An attempt that did not succeed is kept (taskq.job_attempts) with the worker and claim time its
    -- job had before this settle; a success writes nothing. One that finished its job: from
    -- the row del took out, unless finished jobs are not kept (the job is gone, and its earlier attempts go
    -- too: forgotten). One that left its job live: from the row as it was before the update, read for
    -- these few settles only (a success is left out on both inputs, before any read).
    insert into taskq.job_attempts (job_id, attempt, worker_id, gateway, claimed_at, finished_at, outcome, error,
      duration_ms)
    select d.id, d.attempt, d.worker_id, p_gateway, d.started_at, coalesce(p_now, now()),
      case d.kind when 'failure' then 'failed' when 'cancel' then 'cancelled' else 'released' end, d.settle_error,
      coalesce(d.duration_ms, (extract(epoch from (coalesce(p_now, now()) - d.started_at)) * 1000)::bigint)
    from del d where p_keep_finished and d.kind <> 'success'
    union all
    select u.id, u.attempt, j.worker_id, p_gateway, j.started_at, coalesce(p_now, now()),
      case u.kind when 'failure' then 'failed' when 'cancel' then 'cancelled' else 'released' end, i.error,
      coalesce(u.duration_ms, (extract(epoch from (coalesce(p_now, now()) - j.started_at)) * 1000)::bigint)
    from upd u join input i on i.id = u.id and i.attempt = u.attempt
      join taskq.live_jobs j on j.id = any(array(select x.id from upd x where x.kind <> 'success')) and j.id = u.id
    where u.kind <> 'success' and i.kind <> 'success'
    on conflict do nothing
  ), forgotten as (
    delete from taskq.job_attempts a
    where not p_keep_finished and a.job_id = any(array(select d.id from del d where d.attempt > 1))
  ), adp as (
    insert into taskq.adaptive_samples (queue, at, settles, failures, latency_ms_sum)
    select u.queue, coalesce(p_now, now()), count(*), count(*) filter (where u.kind = 'failure'),
      sum(greatest(0, coalesce(u.duration_ms,
        (extract(epoch from (coalesce(p_now, now()) - u.started_at)) * 1000)::int)))
    from settled u
    where u.kind in ('success', 'failure') and u.queue = any(array(select q.name from taskq.queues q
      where q.name = any(array(select distinct s.queue from settled s)) and q.adaptive_min is not null))
    group by u.queue
  ), brk as (
    select taskq.breaker_record(array_agg(u.queue), array_agg(u.id), array_agg(u.attempt), array_agg(u.kind),
      array_agg(coalesce(u.duration_ms,
        (extract(epoch from (coalesce(p_now, now()) - u.started_at)) * 1000)::int)), p_now) as transitions
    from settled u
    where u.queue = any(array(select q.name from taskq.queues q
      where q.name = any(array(select distinct s.queue from settled s)) and q.breaker_failure_threshold is not null))
    having count(*) > 0
  ), woken as (
    -- A failure retried with no delay, or a released job, is ready at once: wake parked polls on every
    -- gateway, as enqueue does.
    select count(pg_notify('taskq_jobs', r.queue)) as n
    from (select distinct u.queue from settled u where u.state = 'queued') r
  )
  select u.id::text, u.attempt, u.queue, u.state,
    case when u.state in ('scheduled', 'queued') then (extract(epoch from u.run_at) * 1000)::float8 end
  from settled u left join brk on true left join woken on true;
end;
$$;
