-- create_schedule(name, spec jsonb, payload, actor): spec keys cron (required), queue (required),
-- time_zone, content_type, priority, flow_key, headers, max_attempts, ttl_seconds, missed_policy,
-- smear_seconds. Slots before now never fire.
create or replace function taskq.create_schedule(p_name text, p_spec jsonb, p_payload bytea, p_actor text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  s taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s.name := taskq.check_schedule_name(p_name);
  s.time_zone := 'UTC';
  s.content_type := '';
  s.priority := 0;
  s.headers := '{}';
  s.missed_policy := 'skip';
  s.smear_seconds := 0;
  s := taskq.apply_schedule_spec(s, p_spec);
  if exists (select 1 from taskq.schedules where name = p_name) then
    raise exception using errcode = '23505', message = 'schedule ' || p_name || ' already exists';
  end if;
  insert into taskq.schedules (name, cron, time_zone, queue, payload, content_type, priority, flow_key, headers,
                               max_attempts, ttl_seconds, missed_policy, smear_seconds)
  values (s.name, s.cron, s.time_zone, s.queue, coalesce(p_payload, ''), s.content_type, s.priority, s.flow_key,
          s.headers, s.max_attempts, s.ttl_seconds, s.missed_policy, s.smear_seconds)
  returning * into s;
  perform taskq.schedule_audit(p_name, 'schedule.create', p_actor, null, taskq.schedule_settings(s));
  return taskq.schedule_settings(s);
end $$;
