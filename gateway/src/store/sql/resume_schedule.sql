-- resume_schedule(name, actor): slots that passed while the schedule was paused stay skipped; it fires
-- again from now.
create or replace function taskq.resume_schedule(p_name text, p_actor text) returns jsonb language plpgsql
security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  s taskq.schedules;
  n taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s := taskq.lock_schedule(p_name);
  update taskq.schedules set paused = false,
    last_slot = case when paused then greatest(last_slot, now()) else last_slot end, updated_at = now()
  where id = s.id returning * into n;
  perform taskq.schedule_audit(p_name, 'schedule.resume', p_actor, taskq.schedule_settings(s), taskq.schedule_settings(n));
  return taskq.schedule_settings(n);
end $$;
