-- Deletes every waiting (queued or scheduled) job of the queue, and its attempts, never a running one;
-- returns the count.
create or replace function taskq.clear_queue(p_name text, p_actor text) returns bigint language plpgsql
security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  q taskq.queues;
  n bigint;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  with gone as (
    delete from taskq.live_jobs where queue = p_name and state in ('queued', 'scheduled') returning id
  ), attempts as (
    -- A job waiting for a retry has attempts (taskq.job_attempts): they go with it.
    delete from taskq.job_attempts a using gone where a.job_id = gone.id
  ) select count(*) into n from gone;
  perform taskq.audit(p_name, 'queue.clear', p_actor, jsonb_build_object('waiting', n), jsonb_build_object('waiting', 0));
  return n;
end $$;
