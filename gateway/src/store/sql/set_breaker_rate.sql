-- set_breaker_rate(queue, failure_ratio, window_seconds, min_volume, actor): trips when at least
-- failure_ratio of the settles of the last window_seconds failed, over at least min_volume settles.
-- A null ratio removes the rate trigger.
create or replace function taskq.set_breaker_rate(p_name text, p_failure_ratio double precision, p_window_seconds integer,
                                                  p_min_volume integer, p_actor text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  if p_failure_ratio is not null then
    if p_failure_ratio = 'NaN'::float8 or p_failure_ratio <= 0 or p_failure_ratio > 1 then
      perform taskq.invalid('failure_ratio', format('must be above 0 and at most 1 (got %s)', p_failure_ratio));
    end if;
    if p_window_seconds is null then perform taskq.invalid('window_seconds', 'is required'); end if;
    if p_min_volume is null then perform taskq.invalid('min_volume', 'is required'); end if;
    perform taskq.check_int('window_seconds', p_window_seconds, 1, 86400);
    perform taskq.check_int('min_volume', p_min_volume, 1, 1000000);
  end if;
  q := taskq.lock_queue(p_name);
  if p_failure_ratio is not null and q.breaker_failure_threshold is null then
    perform taskq.invalid('breaker', 'is off: turn it on with set_breaker_config first');
  end if;
  before := taskq.queue_settings(q);
  update taskq.queues set breaker_rate_failure_ratio = p_failure_ratio,
    breaker_rate_window_seconds = case when p_failure_ratio is null then null else p_window_seconds end,
    breaker_rate_min_volume = case when p_failure_ratio is null then null else p_min_volume end,
    updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.set_breaker_rate', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;
