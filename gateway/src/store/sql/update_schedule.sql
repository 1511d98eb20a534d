-- update_schedule(name, spec jsonb, payload, actor): sets the spec keys given (a null payload keeps
-- the payload). A changed cron or time zone starts afresh: slots before now never fire.
create or replace function taskq.update_schedule(p_name text, p_spec jsonb, p_payload bytea, p_actor text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  s taskq.schedules;
  n taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s := taskq.lock_schedule(p_name);
  n := taskq.apply_schedule_spec(s, p_spec);
  update taskq.schedules set cron = n.cron, time_zone = n.time_zone, queue = n.queue,
    payload = coalesce(p_payload, payload), content_type = n.content_type, priority = n.priority,
    flow_key = n.flow_key, headers = n.headers, max_attempts = n.max_attempts, ttl_seconds = n.ttl_seconds,
    missed_policy = n.missed_policy, smear_seconds = n.smear_seconds,
    last_slot = case when n.cron <> s.cron or n.time_zone <> s.time_zone then greatest(last_slot, now())
                else last_slot end,
    updated_at = now()
  where id = s.id returning * into n;
  perform taskq.schedule_audit(p_name, 'schedule.update', p_actor, taskq.schedule_settings(s), taskq.schedule_settings(n));
  return taskq.schedule_settings(n);
end $$;
