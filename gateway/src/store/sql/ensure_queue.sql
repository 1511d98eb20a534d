-- ensure_queue(name, profile jsonb, actor): creates the queue if needed, then sets the profile keys. The
-- one verb that creates a queue (the gateway calls it for the queues its config file defines): the
-- others answer not found for a queue never seen (require_known_queue).
create or replace function taskq.ensure_queue(p_name text, p_profile jsonb, p_actor text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  perform taskq.add_queue(p_name);
  return taskq.update_profile(p_name, p_profile, p_actor, 'queue.ensure');
end $$;
