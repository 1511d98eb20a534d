-- Who may run what, for operators on psql (grants per the flow-control guide):
--   taskq_observer    reads queue_health, queue_flow, queue_counters, list_queue_audit, list_schedules
--                     and the console's reads (list_jobs, count_jobs, list_job_events,
--                     list_breaker_events, queue_activity, list_workers, list_adaptive_changes);
--   taskq_housekeeper runs prune_queue_audit;
--   taskq_producer    runs enqueue and enqueue_batch, for an application's own database user: it enqueues
--                     in the application's transactions and reads nothing;
--   taskq_operator    all of that, and every operator verb.
-- The functions they run are SECURITY DEFINER (with a pinned search_path, in their own files), so the
-- roles get no privileges on the tables themselves: an observer can't read payloads, a housekeeper can
-- only prune by age, and the audit log stays append-only. EXECUTE is revoked from PUBLIC on all of them,
-- and on fire_schedule, workers_flush, redrive_jobs and enqueue_jobs, which are the gateway's own (or
-- the inside of a verb) and stay with the owner.
-- The roles are cluster-wide and created once, by 0001_baseline.sql (taskq_producer by
-- 0002_producer_role.sql); a migrating user without CREATEROLE skips the ones it can't create. A DBA
-- may create them later: every migrate grants to the roles that exist, and gives a function it
-- restored its grants back.
do $$
declare
  r text;
  f record;
  verbs text[] := array['ensure_queue', 'pause_queue', 'resume_queue', 'clear_queue', 'set_queue_concurrency',
    'set_queue_throttle', 'delete_queue_throttle', 'set_flow_limit', 'set_priority_aging', 'set_breaker_config',
    'set_breaker_rate', 'set_breaker_latency', 'trip_breaker', 'close_breaker', 'create_schedule',
    'update_schedule', 'delete_schedule', 'pause_schedule', 'resume_schedule', 'set_schedule_smear',
    'redrive_failed', 'retry_job', 'set_adaptive_concurrency'];
  reads text[] := array['queue_health', 'list_queue_audit', 'list_schedules', 'list_jobs', 'count_jobs',
    'list_job_events', 'list_breaker_events', 'queue_activity', 'list_workers', 'list_adaptive_changes'];
  housekeeping text[] := array['prune_queue_audit'];
  producing text[] := array['enqueue', 'enqueue_batch'];
  internal text[] := array['fire_schedule', 'workers_flush', 'redrive_jobs', 'enqueue_jobs'];
begin
  for f in
    select p.oid::regprocedure as sig, p.proname::text as name from pg_proc p
    where p.pronamespace = 'taskq'::regnamespace and p.proname = any(verbs || reads || housekeeping || producing || internal)
  loop
    execute format('revoke execute on function %s from public', f.sig);
    if f.name <> all(internal) and exists (select 1 from pg_roles where rolname = 'taskq_operator') then
      execute format('grant execute on function %s to taskq_operator', f.sig);
    end if;
    if f.name = any(reads) and exists (select 1 from pg_roles where rolname = 'taskq_observer') then
      execute format('grant execute on function %s to taskq_observer', f.sig);
    end if;
    if f.name = any(housekeeping) and exists (select 1 from pg_roles where rolname = 'taskq_housekeeper') then
      execute format('grant execute on function %s to taskq_housekeeper', f.sig);
    end if;
    if f.name = any(producing) and exists (select 1 from pg_roles where rolname = 'taskq_producer') then
      execute format('grant execute on function %s to taskq_producer', f.sig);
    end if;
  end loop;

  foreach r in array array['taskq_operator', 'taskq_observer', 'taskq_housekeeper', 'taskq_producer'] loop
    if exists (select 1 from pg_roles where rolname = r) then
      execute format('grant usage on schema taskq to %I', r);
      if r in ('taskq_operator', 'taskq_observer') then
        execute format('grant select on taskq.queue_flow, taskq.queue_counters to %I', r);
      end if;
    end if;
  end loop;
end $$;
