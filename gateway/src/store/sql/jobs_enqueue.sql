-- Enqueueing, like claiming (jobs_claim) and settling (jobs_settle), as a function planned once per connection: as
-- a bare prepared statement Postgres planned it again on every execution (EXPLAIN ANALYZE: planning
-- took longer than executing), on the path every job takes and every producer waits on.
-- Planned once, from the statistics of that moment: made on a nearly empty table, the look for a ready job of
-- an on_idle_transition queue read the whole table for every job enqueued, and written `not exists` it
-- could still read every ready job once (a hashed subplan). It is a scalar subquery with sequential
-- scans off: one index probe per job, whatever the statistics (and jit off: see taskq.jobs_claim).
create or replace function taskq.jobs_enqueue(p_queues text[], p_payloads bytea[], p_content_types text[],
                                              p_priorities integer[], p_flow_keys text[], p_run_ats timestamptz[],
                                              p_delays bigint[], p_ttls integer[], p_max_attempts integer[],
                                              p_keys text[], p_headers jsonb[], p_now timestamptz,
                                              p_notify boolean)
returns table (id text, queue text, idempotency_key text, notified bigint)
language plpgsql volatile
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
begin
  -- A key is refused while a job holds it, live or finished and kept (taskq.jobs hides what is past
  -- retention): the unique index of live jobs covers the first, the look into taskq.jobs below the
  -- second, under the lock that orders it with the move of a finished job (taskq.lock_idempotency_keys).
  if cardinality(array_remove(p_keys, null)) > 0 then
    perform taskq.lock_idempotency_keys(p_queues, p_keys);
  end if;
  -- Inserts a batch in input order; a duplicate idempotency key inserts nothing (the caller looks it
  -- up). Notifies each queue that got a ready job, in the same statement; a queue with notify_mode
  -- on_idle_transition only when it had no ready job before (every part of the statement reads the
  -- snapshot from before the insert), so a busy queue costs no NOTIFY per enqueue. p_notify false
  -- leaves the notifying to the caller (taskq.jobs_enqueue_claim, which hands jobs to polls first).
  return query
  with input as (
    select *, coalesce(t.run_at, coalesce(p_now, now()) + coalesce(t.delay_ms, 0) * interval '1 millisecond') as due
    from unnest(p_queues, p_payloads, p_content_types, p_priorities, p_flow_keys, p_run_ats, p_delays,
                p_ttls, p_max_attempts, p_keys, p_headers)
      with ordinality as t(queue, payload, content_type, priority, flow_key, run_at, delay_ms, ttl_seconds,
                           max_attempts, idempotency_key, headers, ord)
  ), ins as (
    insert into taskq.live_jobs (queue, state, priority, flow_key, payload, content_type, headers, max_attempts,
                            run_at, enqueued_at, expires_at, idempotency_key)
    select input.queue,
           case when due > coalesce(p_now, now()) then 'scheduled' else 'queued' end,
           input.priority, input.flow_key, input.payload, input.content_type, input.headers, input.max_attempts,
           due, coalesce(p_now, now()),
           case when coalesce(nullif(input.ttl_seconds, 0), q.default_ttl_seconds) > 0
             then coalesce(p_now, now())
               + coalesce(nullif(input.ttl_seconds, 0), q.default_ttl_seconds) * interval '1 second' end,
           input.idempotency_key
    from input left join taskq.queues q on q.name = input.queue
    -- A scalar subquery, as below: `not exists` was planned as one read of every job, hashed.
    where input.idempotency_key is null or (select k.id from taskq.jobs k
      where k.queue = input.queue and k.idempotency_key = input.idempotency_key limit 1) is null
    order by input.ord
    on conflict (queue, idempotency_key) where idempotency_key is not null do nothing
    returning taskq.live_jobs.id, taskq.live_jobs.queue, taskq.live_jobs.state, taskq.live_jobs.idempotency_key
  ), known as (
    -- The first enqueue into a queue makes it known (taskq.known_queues), so every list of queues shows
    -- it. One primary-key probe per queue of the batch; nothing is written once the name is there.
    -- From p_queues rather than input, which a second reader would make Postgres materialize (+30 us
    -- per 50 jobs). Measured in the function, best of 10 runs: 34 -> 37 us for one job, 326 -> 336 us
    -- for 50 (a probe per job instead of per distinct queue: 354 us).
    insert into taskq.known_queues (name)
    select n.queue from (select distinct u.queue from unnest(p_queues) as u(queue)) n
    where not exists (select 1 from taskq.known_queues k where k.name = n.queue)
    on conflict do nothing
  ), woken as (
    select pg_notify('taskq_jobs', w.queue) from (
      select distinct ins.queue from ins left join taskq.queues p on p.name = ins.queue
      where p_notify and ins.state = 'queued'
        and (p.notify_mode is distinct from 'on_idle_transition'
          or (select r.id from taskq.live_jobs r where r.queue = ins.queue and r.state = 'queued' limit 1) is null)
    ) w
  )
  select ins.id::text, ins.queue, ins.idempotency_key, (select count(*) from woken)
  from ins order by ins.id;
end;
$$;
