-- set_priority_aging(queue, seconds, actor): +1 effective priority per `seconds` waited; null = strict.
create or replace function taskq.set_priority_aging(p_name text, p_seconds integer, p_actor text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  perform taskq.check_int('aging_seconds', p_seconds, 1, 31536000);
  return taskq.update_profile(p_name, jsonb_build_object('priority_aging_seconds', p_seconds), p_actor,
                              'queue.set_aging');
end $$;
