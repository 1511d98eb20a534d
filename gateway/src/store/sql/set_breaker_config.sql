-- set_breaker_config(queue, failure_threshold, cooldown_seconds, half_open_successes, actor): turns the
-- breaker on (streak trigger) or changes it; a null threshold turns the whole breaker off (rate and
-- latency triggers included) and closes it.
create or replace function taskq.set_breaker_config(p_name text, p_failure_threshold integer, p_cooldown_seconds integer,
                                                    p_half_open_successes integer, p_actor text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_int('failure_threshold', p_failure_threshold, 1, 1000000);
  if p_failure_threshold is not null then
    if p_cooldown_seconds is null then perform taskq.invalid('cooldown_seconds', 'is required'); end if;
    perform taskq.check_int('cooldown_seconds', p_cooldown_seconds, 1, 86400);
    perform taskq.check_int('half_open_successes', p_half_open_successes, 1, 1000);
  end if;
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  if p_failure_threshold is null then
    update taskq.queues set breaker_failure_threshold = null, breaker_cooldown_seconds = null,
      breaker_half_open_successes = null, breaker_rate_failure_ratio = null, breaker_rate_window_seconds = null,
      breaker_rate_min_volume = null, breaker_latency_threshold_ms = null, breaker_latency_window_seconds = null,
      breaker_latency_min_volume = null, breaker_state = 'closed', breaker_failure_streak = 0,
      breaker_tripped_at = null, breaker_probe_job_id = null, breaker_probe_attempt = null,
      breaker_probe_successes = 0, updated_at = now()
    where name = p_name returning * into q;
    delete from taskq.breaker_samples where queue = p_name;
  else
    update taskq.queues set breaker_failure_threshold = p_failure_threshold,
      breaker_cooldown_seconds = p_cooldown_seconds,
      breaker_half_open_successes = coalesce(p_half_open_successes, 1), updated_at = now()
    where name = p_name returning * into q;
  end if;
  perform taskq.audit(p_name, 'queue.set_breaker', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;
