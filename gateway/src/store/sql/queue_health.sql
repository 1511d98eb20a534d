-- queue_health(queue | null): one row per queue (every known queue when null: taskq.known_queues) with a
-- verdict, first that applies: paused, breaker_open, half_open, ramping, throttled (a throttle or claim
-- rate is set and ready jobs wait), backlogged (the oldest ready job has waited more than a minute),
-- idle (nothing waiting or running), healthy. `detail` carries the breaker state, the adaptive limit
-- (its value now, bounds and last decision) and the levels.
create or replace function taskq.queue_health(p_queue text) returns table (queue text, verdict text, detail jsonb)
language sql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
  with names as (
    select k.name from taskq.known_queues k where p_queue is null or k.name = p_queue
  ), levels as (
    select n.name,
      (select count(*) from taskq.live_jobs j where j.queue = n.name and j.state = 'queued') as queued,
      (select count(*) from taskq.live_jobs j where j.queue = n.name and j.state = 'scheduled') as scheduled,
      (select count(*) from taskq.live_jobs j where j.queue = n.name and j.state = 'running') as running,
      (select extract(epoch from now() - min(j.run_at)) from taskq.live_jobs j
        where j.queue = n.name and j.state = 'queued') as oldest_ready_seconds
    from names n
  )
  select l.name,
    case
      when q.paused then 'paused'
      when q.breaker_state = 'open' then 'breaker_open'
      when q.breaker_state = 'half_open' then 'half_open'
      when q.ramp_seconds is not null and q.ramp_started_at is not null
        and now() < q.ramp_started_at + q.ramp_seconds * interval '1 second' then 'ramping'
      when (q.throttle_limit is not null or q.claim_rate_per_minute is not null) and l.queued > 0 then 'throttled'
      when l.oldest_ready_seconds > 60 then 'backlogged'
      when l.queued + l.scheduled + l.running = 0 then 'idle'
      else 'healthy'
    end,
    jsonb_build_object(
      'breaker', case when q.breaker_failure_threshold is null then null else jsonb_build_object(
        'state', q.breaker_state, 'failure_streak', q.breaker_failure_streak,
        'opened_total', q.breaker_opened_total, 'tripped_at', q.breaker_tripped_at,
        'reopens_at', case when q.breaker_state = 'open'
          then q.breaker_tripped_at + q.breaker_cooldown_seconds * interval '1 second' end) end,
      'adaptive', case when q.adaptive_min is null then null else jsonb_build_object(
        'limit', q.max_running, 'min', q.adaptive_min, 'max', q.adaptive_max,
        'target_latency_ms', q.adaptive_target_latency_ms, 'decided_at', q.adaptive_decided_at,
        'reason', q.adaptive_reason) end,
      'levels', jsonb_build_object('queued', l.queued, 'scheduled', l.scheduled, 'running', l.running),
      'oldest_ready_seconds', round(l.oldest_ready_seconds::numeric, 3))
  from levels l left join taskq.queues q on q.name = l.name
  order by l.name
$$;
