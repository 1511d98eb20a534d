-- Locks a known queue's row (creating it for a queue with jobs but no settings yet); not found otherwise.
create or replace function taskq.lock_queue(p_name text) returns taskq.queues language plpgsql as $$
begin
  perform taskq.require_known_queue(p_name);
  return taskq.add_queue(p_name);
end $$;
