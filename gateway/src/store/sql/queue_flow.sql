-- Flow state per queue (settings, breaker state, adaptive limit), for operators: every known queue (taskq.known_queues),
-- one without settings with every gate off, as queue_row gives it. A join rather than queue_row: a view's
-- readers (taskq_observer) may read it but not taskq.queues, which queue_row reads as its caller.
create or replace view taskq.queue_flow as
select k.name as queue, coalesce(q.paused, false) as paused, q.max_running, q.throttle_limit,
  q.throttle_period_ms, q.claim_rate_per_minute, q.claim_burst, q.ramp_seconds, q.ramp_started_at,
  q.priority_aging_seconds, q.default_ttl_seconds, coalesce(q.notify_mode, 'always') as notify_mode,
  q.breaker_failure_threshold, q.breaker_cooldown_seconds, q.breaker_half_open_successes,
  q.breaker_rate_failure_ratio, q.breaker_rate_window_seconds, q.breaker_rate_min_volume,
  q.breaker_latency_threshold_ms, q.breaker_latency_window_seconds, q.breaker_latency_min_volume,
  coalesce(q.breaker_state, 'closed') as breaker_state, coalesce(q.breaker_failure_streak, 0) as breaker_failure_streak,
  coalesce(q.breaker_opened_total, 0) as breaker_opened_total, q.breaker_tripped_at, q.breaker_probe_job_id,
  coalesce(q.breaker_probe_successes, 0) as breaker_probe_successes, q.updated_at,
  -- The adaptive limit (its value now is max_running), null while it is off.
  q.adaptive_min, q.adaptive_max, q.adaptive_target_latency_ms, q.adaptive_fixed_max_running,
  q.adaptive_decided_at, q.adaptive_reason
from taskq.known_queues k left join taskq.queues q on q.name = k.name;
