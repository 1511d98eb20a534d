-- The REST "concurrency" route: the fleet-wide max_running; null removes the cap. While the queue has an
-- adaptive limit (set_adaptive_concurrency), that limit is its max_running: this sets the cap kept aside,
-- which turning the adaptive limit off restores.
create or replace function taskq.set_queue_concurrency(p_name text, p_max_running integer, p_actor text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_int('max_running', p_max_running, 1, 1000000);
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  update taskq.queues set
    max_running = case when adaptive_min is null then p_max_running else max_running end,
    adaptive_fixed_max_running = case when adaptive_min is null then null else p_max_running end,
    updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.concurrency', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;
