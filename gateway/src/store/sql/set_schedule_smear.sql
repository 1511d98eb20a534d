-- set_schedule_smear(name, smear_seconds, actor): 0 to 86,400; 0 (or null) fires on the slot.
create or replace function taskq.set_schedule_smear(p_name text, p_smear_seconds integer, p_actor text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  s taskq.schedules;
  n taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_int('smear_seconds', p_smear_seconds, 0, 86400);
  s := taskq.lock_schedule(p_name);
  update taskq.schedules set smear_seconds = coalesce(p_smear_seconds, 0), updated_at = now()
  where id = s.id returning * into n;
  perform taskq.schedule_audit(p_name, 'schedule.set_smear', p_actor, taskq.schedule_settings(s), taskq.schedule_settings(n));
  return taskq.schedule_settings(n);
end $$;
