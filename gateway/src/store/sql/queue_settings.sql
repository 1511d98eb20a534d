-- The public view of a queue's settings, as every verb returns it and the audit records it. With an
-- adaptive limit on, max_running is that limit now.
create or replace function taskq.queue_settings(q taskq.queues) returns jsonb language sql immutable as $$
  select jsonb_build_object(
    'paused', q.paused,
    'max_running', q.max_running,
    'throttle', case when q.throttle_limit is null then null else jsonb_build_object(
      'limit', q.throttle_limit, 'period_ms', q.throttle_period_ms, 'source', q.throttle_source) end,
    'claim_rate_per_minute', q.claim_rate_per_minute,
    'claim_burst', q.claim_burst,
    'ramp_seconds', q.ramp_seconds,
    'ramp_started_at', q.ramp_started_at,
    'priority_aging_seconds', q.priority_aging_seconds,
    'default_ttl_seconds', q.default_ttl_seconds,
    'notify_mode', q.notify_mode,
    'breaker', taskq.breaker_settings(q),
    'adaptive', taskq.adaptive_settings(q))
$$;
