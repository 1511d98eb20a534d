-- close_breaker(queue, actor): force closed, streak and windows reset, and the slow-start ramp starts
-- when the queue has ramp_seconds; an adaptive limit restarts from its min
-- (taskq.adaptive_restart) when the breaker was not closed already.
create or replace function taskq.close_breaker(p_name text, p_actor text) returns jsonb language plpgsql
security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  if q.breaker_failure_threshold is null then
    raise exception using errcode = '55000',
      message = 'queue ' || p_name || ' has no breaker - turn it on with set_breaker_config first';
  end if;
  before := taskq.queue_settings(q);
  update taskq.queues set breaker_state = 'closed', breaker_failure_streak = 0, breaker_probe_job_id = null,
    breaker_probe_attempt = null, breaker_probe_successes = 0,
    ramp_started_at = case when ramp_seconds is not null then now() else ramp_started_at end,
    updated_at = now()
  where name = p_name returning * into q;
  delete from taskq.breaker_samples where queue = p_name;
  if before -> 'breaker' ->> 'state' <> 'closed' then
    perform taskq.adaptive_restart(p_name, now(), 'the breaker was closed by ' || p_actor);
    select * into q from taskq.queues where name = p_name;
  end if;
  perform taskq.audit(p_name, 'queue.close_breaker', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;
