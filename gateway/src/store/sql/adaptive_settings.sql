-- The adaptive part of queue_settings: the limit's bounds and target, the operator's own max_running it
-- stands in for (restored when adaptive is turned off), and its last decision; null while it is off.
-- The effective limit itself is the queue's max_running.
create or replace function taskq.adaptive_settings(q taskq.queues) returns jsonb language sql immutable as $$
  select case when q.adaptive_min is null then null else jsonb_build_object(
    'min', q.adaptive_min,
    'max', q.adaptive_max,
    'target_latency_ms', q.adaptive_target_latency_ms,
    'fixed_max_running', q.adaptive_fixed_max_running,
    'slow_start', coalesce(q.adaptive_slow_start, false),
    'decided_at', q.adaptive_decided_at,
    'reason', q.adaptive_reason) end
$$;
