-- delete_schedule(name, actor): the schedule and its record of fired slots go; returns its last settings.
create or replace function taskq.delete_schedule(p_name text, p_actor text) returns jsonb language plpgsql
security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  s taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s := taskq.lock_schedule(p_name);
  delete from taskq.schedules where id = s.id;
  perform taskq.schedule_audit(p_name, 'schedule.delete', p_actor, taskq.schedule_settings(s), null);
  return taskq.schedule_settings(s);
end $$;
