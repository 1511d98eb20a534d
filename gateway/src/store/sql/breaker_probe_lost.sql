-- The lease of a half-open breaker's probe expired: a failure (the downstream hung); the breaker
-- re-opens with a fresh cooldown and the probe slot is free again.
create or replace function taskq.breaker_probe_lost(p_queue text, p_id bigint, p_attempt integer, p_now timestamptz)
returns integer language plpgsql as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  q taskq.queues;
begin
  select * into q from taskq.queues where name = p_queue for update;
  if q.breaker_state <> 'half_open' or q.breaker_probe_job_id is distinct from p_id
     or q.breaker_probe_attempt is distinct from p_attempt then
    return 0;
  end if;
  update taskq.queues set breaker_state = 'open', breaker_tripped_at = v_now,
    breaker_opened_total = breaker_opened_total + 1, breaker_failure_streak = breaker_failure_streak + 1,
    breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_probe_successes = 0
  where name = p_queue;
  insert into taskq.job_events (job_id, event_type, data, created_at)
  values (p_id, 'breaker_reopened', jsonb_build_object('queue', p_queue, 'trigger', 'probe_lease_expired',
    'cooldown_seconds', q.breaker_cooldown_seconds), v_now);
  perform pg_notify('taskq_queues', p_queue);
  return 1;
end $$;
