-- The breaker part of queue_settings: its configuration and state, or null while the queue has none.
create or replace function taskq.breaker_settings(q taskq.queues) returns jsonb language sql immutable as $$
  select case when q.breaker_failure_threshold is null then null else jsonb_build_object(
    'failure_threshold', q.breaker_failure_threshold,
    'cooldown_seconds', q.breaker_cooldown_seconds,
    'half_open_successes', q.breaker_half_open_successes,
    'rate', case when q.breaker_rate_failure_ratio is null then null else jsonb_build_object(
      'failure_ratio', q.breaker_rate_failure_ratio, 'window_seconds', q.breaker_rate_window_seconds,
      'min_volume', q.breaker_rate_min_volume) end,
    'latency', case when q.breaker_latency_threshold_ms is null then null else jsonb_build_object(
      'threshold_ms', q.breaker_latency_threshold_ms, 'window_seconds', q.breaker_latency_window_seconds,
      'min_volume', q.breaker_latency_min_volume) end,
    'state', q.breaker_state,
    'failure_streak', q.breaker_failure_streak,
    'opened_total', q.breaker_opened_total,
    'tripped_at', q.breaker_tripped_at,
    'probe_job_id', q.breaker_probe_job_id::text,
    'probe_successes', q.breaker_probe_successes) end
$$;
