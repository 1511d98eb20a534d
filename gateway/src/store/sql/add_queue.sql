-- Creates the queue's row if needed (every gate off) and locks it: only for the verbs that create.
create or replace function taskq.add_queue(p_name text) returns taskq.queues language plpgsql as $$
declare
  q taskq.queues;
begin
  perform taskq.check_queue_name(p_name);
  insert into taskq.queues (name) values (p_name) on conflict (name) do nothing;
  -- Every queue with settings is a known one (taskq.known_queues).
  insert into taskq.known_queues (name) values (p_name) on conflict (name) do nothing;
  select * into q from taskq.queues where name = p_name for update;
  return q;
end $$;
