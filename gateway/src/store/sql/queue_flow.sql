-- Flow state per queue (settings and breaker state), for operators.
create or replace view taskq.queue_flow as
select name as queue, paused, max_running, throttle_limit, throttle_period_ms, claim_rate_per_minute, claim_burst,
  ramp_seconds, ramp_started_at, priority_aging_seconds, default_ttl_seconds, notify_mode,
  breaker_failure_threshold, breaker_cooldown_seconds, breaker_half_open_successes,
  breaker_rate_failure_ratio, breaker_rate_window_seconds, breaker_rate_min_volume,
  breaker_latency_threshold_ms, breaker_latency_window_seconds, breaker_latency_min_volume,
  breaker_state, breaker_failure_streak, breaker_opened_total, breaker_tripped_at, breaker_probe_job_id,
  breaker_probe_successes, updated_at
from taskq.queues;
