-- Slots that pass while a schedule is paused are skipped (resume does not catch up).
create or replace function taskq.pause_schedule(p_name text, p_actor text) returns jsonb language plpgsql
security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  s taskq.schedules;
  n taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s := taskq.lock_schedule(p_name);
  update taskq.schedules set paused = true, updated_at = now() where id = s.id returning * into n;
  perform taskq.schedule_audit(p_name, 'schedule.pause', p_actor, taskq.schedule_settings(s), taskq.schedule_settings(n));
  return taskq.schedule_settings(n);
end $$;
