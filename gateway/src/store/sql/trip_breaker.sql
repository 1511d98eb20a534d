-- trip_breaker(queue, actor): force open (planned downstream maintenance), with a fresh cooldown.
create or replace function taskq.trip_breaker(p_name text, p_actor text) returns jsonb language plpgsql
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
  update taskq.queues set breaker_state = 'open', breaker_tripped_at = now(),
    breaker_opened_total = breaker_opened_total + 1, breaker_probe_job_id = null, breaker_probe_attempt = null,
    breaker_probe_successes = 0, updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.trip_breaker', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;
