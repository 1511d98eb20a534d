-- taskq schema, version 5: the operator plane's reads (the audit log, live counters) and its
-- housekeeping, and the Postgres roles an operator connects with from psql.

-- list_queue_audit(queue, limit, before_id): the queue's audit rows, newest first; with before_id only
-- rows with an id below it (the next page). limit defaults to 50, 1 to 1000.
create function taskq.list_queue_audit(p_queue text, p_limit integer default null, p_before_id bigint default null)
returns table (id bigint, event_type text, actor text, detail jsonb, created_at timestamptz)
language plpgsql stable as $$
begin
  if p_queue is null or length(p_queue) = 0 or length(p_queue) > 300 then
    perform taskq.invalid('queue', 'must be a queue name (or flow:<key>)');
  end if;
  perform taskq.check_int('limit', p_limit, 1, 1000);
  return query
  select a.id, a.event_type, a.actor, a.detail, a.created_at from taskq.queue_audit a
  where a.queue = p_queue and (p_before_id is null or a.id < p_before_id)
  order by a.id desc
  limit coalesce(p_limit, 50);
end $$;

-- prune_queue_audit(older_than_hours): deletes audit rows older than that (1 to 876,000 hours, 100
-- years); returns how many. Safe to run on a schedule.
create function taskq.prune_queue_audit(p_older_than_hours integer) returns bigint language plpgsql as $$
declare
  n bigint;
begin
  if p_older_than_hours is null then perform taskq.invalid('older_than_hours', 'is required'); end if;
  perform taskq.check_int('older_than_hours', p_older_than_hours, 1, 876000);
  with gone as (
    delete from taskq.queue_audit where created_at < now() - p_older_than_hours * interval '1 hour' returning 1
  ) select count(*) into n from gone;
  return n;
end $$;

-- Live levels and throughput per queue (every queue with settings, waiting or running jobs, or jobs
-- finished in the last hour). Throughput counts jobs that finished (succeeded, or failed for good) in
-- the last minute / hour: finished jobs are kept for the retention window, so a retention shorter
-- than an hour undercounts the hour.
create view taskq.queue_counters as
with names as (
  select q.name as queue from taskq.queues q
  union
  select j.queue from taskq.jobs j where j.state in ('scheduled', 'queued', 'running')
  union
  select j.queue from taskq.jobs j
  where j.state in ('succeeded', 'failed', 'cancelled') and j.finished_at > now() - interval '1 hour'
)
select n.queue,
  (select count(*) from taskq.jobs j where j.queue = n.queue and j.state = 'queued') as queued,
  (select count(*) from taskq.jobs j where j.queue = n.queue and j.state = 'scheduled') as scheduled,
  (select count(*) from taskq.jobs j where j.queue = n.queue and j.state = 'running') as running,
  t.succeeded_last_minute, t.failed_last_minute, t.succeeded_last_hour, t.failed_last_hour,
  (select round(extract(epoch from now() - min(j.run_at))::numeric, 3) from taskq.jobs j
    where j.queue = n.queue and j.state = 'queued') as oldest_ready_seconds
from names n
cross join lateral (
  select
    count(*) filter (where j.state = 'succeeded' and j.finished_at > now() - interval '1 minute') as succeeded_last_minute,
    count(*) filter (where j.state = 'failed' and j.finished_at > now() - interval '1 minute') as failed_last_minute,
    count(*) filter (where j.state = 'succeeded') as succeeded_last_hour,
    count(*) filter (where j.state = 'failed') as failed_last_hour
  from taskq.jobs j
  where j.queue = n.queue and j.state in ('succeeded', 'failed') and j.finished_at > now() - interval '1 hour'
) t;

-- Roles for operators on psql (grants per the flow-control guide):
--   taskq_observer    reads queue_health, queue_flow, queue_counters and list_queue_audit;
--   taskq_housekeeper runs prune_queue_audit;
--   taskq_operator    all of that, and every operator verb.
-- The functions they run are SECURITY DEFINER (with a pinned search_path), so the roles get no
-- privileges on the tables themselves: an observer can't read payloads, a housekeeper can only prune
-- by age, and the audit log stays append-only. EXECUTE is revoked from PUBLIC on all of them.
-- Roles are cluster-wide: created once, idempotently. A migrating user without CREATEROLE skips the
-- roles it can't create (with a notice) instead of failing the migration; a DBA can create them and
-- rerun the grants below.
do $$
declare
  r text;
  f record;
  verbs text[] := array['ensure_queue', 'pause_queue', 'resume_queue', 'clear_queue', 'set_queue_concurrency',
    'set_queue_throttle', 'delete_queue_throttle', 'set_flow_limit', 'set_priority_aging', 'set_breaker_config',
    'set_breaker_rate', 'set_breaker_latency', 'trip_breaker', 'close_breaker'];
  reads text[] := array['queue_health', 'list_queue_audit'];
  housekeeping text[] := array['prune_queue_audit'];
begin
  foreach r in array array['taskq_operator', 'taskq_observer', 'taskq_housekeeper'] loop
    begin
      execute format('create role %I nologin', r);
    exception
      when duplicate_object or unique_violation then null;
      when insufficient_privilege then raise notice 'taskq: cannot create role % (no CREATEROLE); skipped', r;
    end;
  end loop;

  for f in
    select p.oid::regprocedure as sig, p.proname::text as name from pg_proc p
    where p.pronamespace = 'taskq'::regnamespace and p.proname = any(verbs || reads || housekeeping)
  loop
    execute format('alter function %s security definer set search_path = pg_catalog, taskq, pg_temp', f.sig);
    execute format('revoke execute on function %s from public', f.sig);
    if exists (select 1 from pg_roles where rolname = 'taskq_operator') then
      execute format('grant execute on function %s to taskq_operator', f.sig);
    end if;
    if f.name = any(reads) and exists (select 1 from pg_roles where rolname = 'taskq_observer') then
      execute format('grant execute on function %s to taskq_observer', f.sig);
    end if;
    if f.name = any(housekeeping) and exists (select 1 from pg_roles where rolname = 'taskq_housekeeper') then
      execute format('grant execute on function %s to taskq_housekeeper', f.sig);
    end if;
  end loop;

  foreach r in array array['taskq_operator', 'taskq_observer', 'taskq_housekeeper'] loop
    if exists (select 1 from pg_roles where rolname = r) then
      execute format('grant usage on schema taskq to %I', r);
      if r <> 'taskq_housekeeper' then
        execute format('grant select on taskq.queue_flow, taskq.queue_counters to %I', r);
      end if;
    end if;
  end loop;
end $$;
