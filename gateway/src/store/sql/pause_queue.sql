-- pause_queue(queue, actor): no job of the queue is claimed until resume_queue (jobs_claim reads paused
-- under the queue's row lock, which this holds until it commits); running jobs are left alone.
create or replace function taskq.pause_queue(p_name text, p_actor text) returns jsonb language plpgsql
security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  update taskq.queues set paused = true, updated_at = now() where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.pause', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;
