-- Resuming starts the slow-start ramp when the queue has one.
create or replace function taskq.resume_queue(p_name text, p_actor text) returns jsonb language plpgsql
security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  update taskq.queues set paused = false,
    ramp_started_at = case when ramp_seconds is not null and paused then now() else ramp_started_at end,
    updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.resume', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;
