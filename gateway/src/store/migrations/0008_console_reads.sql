-- taskq schema, version 8: the console's reads (a queue's jobs by state, a job's events, a queue's
-- breaker events, per-minute activity), and the half-open transition recorded as a job event.

-- list_jobs(queue, state, limit, before_id): the queue's jobs in that state, newest first, without
-- payload or result bytes (their sizes instead); with before_id only jobs with an id below it (the next
-- page). limit defaults to 50, 1 to 1000.
create function taskq.list_jobs(p_queue text, p_state text, p_limit integer default null,
                                p_before_id bigint default null)
returns table (id bigint, state text, priority smallint, attempt integer, max_attempts integer, flow_key text,
               content_type text, payload_bytes integer, enqueued_at timestamptz, run_at timestamptz,
               started_at timestamptz, finished_at timestamptz, outcome text, last_error jsonb, worker_id text)
language plpgsql stable as $$
begin
  perform taskq.check_queue_name(p_queue);
  if p_state is null or p_state not in ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled') then
    perform taskq.invalid('state', 'must be scheduled, queued, running, succeeded, failed or cancelled');
  end if;
  perform taskq.check_int('limit', p_limit, 1, 1000);
  return query
  select j.id, j.state, j.priority, j.attempt, j.max_attempts, j.flow_key, j.content_type,
    octet_length(j.payload), j.enqueued_at, j.run_at, j.started_at, j.finished_at, j.outcome, j.last_error,
    j.worker_id
  from taskq.jobs j
  where j.queue = p_queue and j.state = p_state and (p_before_id is null or j.id < p_before_id)
  order by j.id desc
  limit coalesce(p_limit, 50);
end $$;

-- count_jobs(queue, state): how many jobs of the queue are in that state (the total ListJobs pages).
create function taskq.count_jobs(p_queue text, p_state text) returns bigint language plpgsql stable as $$
declare
  n bigint;
begin
  perform taskq.check_queue_name(p_queue);
  if p_state is null or p_state not in ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled') then
    perform taskq.invalid('state', 'must be scheduled, queued, running, succeeded, failed or cancelled');
  end if;
  select count(*) into n from taskq.jobs j where j.queue = p_queue and j.state = p_state;
  return n;
end $$;

-- list_job_events(job_id): the job's events, oldest first (at most 1000).
create function taskq.list_job_events(p_job_id bigint)
returns table (id bigint, event_type text, data jsonb, created_at timestamptz)
language plpgsql stable as $$
begin
  if p_job_id is null or p_job_id < 1 then perform taskq.invalid('job_id', 'must be a job id'); end if;
  return query
  select e.id, e.event_type, e.data, e.created_at from taskq.job_events e
  where e.job_id = p_job_id order by e.id limit 1000;
end $$;

-- The claim that hands out a probe moves the breaker to half_open without an event of its own; this
-- records it on the probe job, like the other transitions (claim_queue itself is left as it is), at
-- the claim's time: the probe's started_at, which the same claim has just set.
create function taskq.record_breaker_half_open() returns trigger language plpgsql as $$
begin
  insert into taskq.job_events (job_id, event_type, data, created_at)
  select new.breaker_probe_job_id, 'breaker_half_open',
    jsonb_build_object('queue', new.name, 'probe_attempt', new.breaker_probe_attempt),
    coalesce((select j.started_at from taskq.jobs j where j.id = new.breaker_probe_job_id), now());
  return null;
end $$;

create trigger queues_breaker_half_open after update of breaker_state on taskq.queues
for each row when (new.breaker_state = 'half_open' and old.breaker_state <> 'half_open'
                   and new.breaker_probe_job_id is not null)
execute function taskq.record_breaker_half_open();

-- Breaker events by queue, newest first.
create index job_events_breaker_idx on taskq.job_events ((data ->> 'queue'), created_at desc)
where event_type like 'breaker\_%';

-- list_breaker_events(queue, limit): the breaker's transitions, newest first: automatic ones from the
-- job events (opened, reopened, half_open, closed, with the job that caused them) and manual ones from
-- the audit log (trip_breaker, close_breaker, with the actor). limit defaults to 20, 1 to 200.
create function taskq.list_breaker_events(p_queue text, p_limit integer default null)
returns table (event_type text, job_id bigint, actor text, data jsonb, created_at timestamptz)
language plpgsql stable as $$
begin
  perform taskq.check_queue_name(p_queue);
  perform taskq.check_int('limit', p_limit, 1, 200);
  return query
  select * from (
    (select e.event_type, e.job_id, null::text, e.data - 'queue', e.created_at from taskq.job_events e
     where e.data ->> 'queue' = p_queue and e.event_type like 'breaker\_%'
     order by e.created_at desc limit coalesce(p_limit, 20))
    union all
    (select a.event_type, null::bigint, a.actor, '{}'::jsonb, a.created_at from taskq.queue_audit a
     where a.queue = p_queue and a.event_type in ('queue.trip_breaker', 'queue.close_breaker')
     order by a.id desc limit coalesce(p_limit, 20))
  ) x
  order by x.created_at desc
  limit coalesce(p_limit, 20);
end $$;

-- queue_activity(queue, minutes): one row per minute of the last `minutes` (1 to 60, default 15),
-- oldest first, the current minute included: claims (jobs whose latest attempt started that minute:
-- a retried job counts its latest claim only), jobs finished that minute by outcome with their
-- run time (finished_at - started_at, average and max, in ms), and the throttled verdicts of that
-- minute by reason, fleet-wide.
create function taskq.queue_activity(p_queue text, p_minutes integer default null)
returns table (minute timestamptz, claimed bigint, succeeded bigint, failed bigint, cancelled bigint,
               avg_run_ms double precision, max_run_ms double precision, throttled jsonb)
language plpgsql stable as $$
declare
  v_from timestamptz;
begin
  perform taskq.check_queue_name(p_queue);
  perform taskq.check_int('minutes', p_minutes, 1, 60);
  v_from := date_trunc('minute', now()) - (coalesce(p_minutes, 15) - 1) * interval '1 minute';
  return query
  with recent as (
    -- A job that started in the window has since finished (finished_at >= started_at) or is still
    -- running or waiting for a retry: each branch has an index.
    select j.state, j.started_at, j.finished_at from taskq.jobs j
    where j.queue = p_queue and j.state in ('succeeded', 'failed', 'cancelled') and j.finished_at >= v_from
    union all
    select j.state, j.started_at, j.finished_at from taskq.jobs j
    where j.queue = p_queue and j.state in ('running', 'queued', 'scheduled') and j.started_at >= v_from
  ), claims as (
    select date_trunc('minute', r.started_at) as m, count(*) as n from recent r
    where r.started_at >= v_from group by 1
  ), finishes as (
    select date_trunc('minute', r.finished_at) as m,
      count(*) filter (where r.state = 'succeeded') as succeeded,
      count(*) filter (where r.state = 'failed') as failed,
      count(*) filter (where r.state = 'cancelled') as cancelled,
      avg(extract(epoch from r.finished_at - r.started_at) * 1000)
        filter (where r.state in ('succeeded', 'failed') and r.started_at is not null) as avg_ms,
      max(extract(epoch from r.finished_at - r.started_at) * 1000)
        filter (where r.state in ('succeeded', 'failed') and r.started_at is not null) as max_ms
    from recent r where r.finished_at >= v_from group by 1
  ), throttles as (
    select th.minute as m, jsonb_object_agg(th.reason, th.count) as t from taskq.queue_throttled th
    where th.queue = p_queue and th.minute >= v_from group by 1
  )
  select m.m, coalesce(c.n, 0), coalesce(f.succeeded, 0), coalesce(f.failed, 0), coalesce(f.cancelled, 0),
    round(f.avg_ms, 1)::float8, round(f.max_ms, 1)::float8, coalesce(t.t, '{}'::jsonb)
  from generate_series(v_from, date_trunc('minute', now()), interval '1 minute') as m(m)
  left join claims c on c.m = m.m
  left join finishes f on f.m = m.m
  left join throttles t on t.m = m.m
  order by m.m;
end $$;

-- Grants, as in version 5: SECURITY DEFINER with a pinned search_path, EXECUTE revoked from PUBLIC,
-- granted to taskq_operator and taskq_observer (all reads). The trigger function stays the owner's.
do $$
declare
  f record;
  reads text[] := array['list_jobs', 'count_jobs', 'list_job_events', 'list_breaker_events', 'queue_activity'];
begin
  for f in
    select p.oid::regprocedure as sig from pg_proc p
    where p.pronamespace = 'taskq'::regnamespace and p.proname = any(reads)
  loop
    execute format('alter function %s security definer set search_path = pg_catalog, taskq, pg_temp', f.sig);
    execute format('revoke execute on function %s from public', f.sig);
    if exists (select 1 from pg_roles where rolname = 'taskq_operator') then
      execute format('grant execute on function %s to taskq_operator', f.sig);
    end if;
    if exists (select 1 from pg_roles where rolname = 'taskq_observer') then
      execute format('grant execute on function %s to taskq_observer', f.sig);
    end if;
  end loop;
end $$;
