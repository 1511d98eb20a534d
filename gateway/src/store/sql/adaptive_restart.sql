-- adaptive_restart(queue, at, why): an adaptive queue's limit starts again from its min, in slow start,
-- and the settles recorded before are dropped. Called when its breaker closes (breaker_record,
-- close_breaker): the downstream just recovered, so what the limit was before the trip says nothing
-- about what it takes now. The slow-start ramp, when the queue has one, scales that min as it scales
-- any max_running. Does nothing for a queue without an adaptive limit. The caller notifies.
create or replace function taskq.adaptive_restart(p_queue text, p_at timestamptz, p_why text) returns void
language plpgsql as $$
declare
  q taskq.queues;
  v_reason text;
begin
  select * into q from taskq.queues where name = p_queue for update;
  if q.adaptive_min is null then
    return;
  end if;
  v_reason := format('restarted from min %s after %s', q.adaptive_min, p_why);
  update taskq.queues set max_running = adaptive_min, adaptive_slow_start = true, adaptive_decided_at = p_at,
    adaptive_reason = v_reason
  where name = p_queue;
  delete from taskq.adaptive_samples where queue = p_queue;
  if q.max_running is distinct from q.adaptive_min then
    perform taskq.adaptive_note(p_queue, q.max_running, q.adaptive_min, v_reason, '{}', p_at);
  end if;
end $$;
