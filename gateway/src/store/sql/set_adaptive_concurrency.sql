-- set_adaptive_concurrency(queue, min, max, target_latency_ms, actor): the queue's max_running becomes
-- an adaptive limit, moved between min and max by taskq.adapt_concurrency from the queue's settles
-- (see taskq.adaptive_step); a null min (with max and target null) turns it off. Turning it on keeps
-- the operator's max_running aside and starts the limit at min, in slow start; turning it off restores
-- that max_running. Changing the bounds of a limit already on keeps its value, brought within them.
-- While it is on, set_queue_concurrency and a profile's max_running change the kept value only.
-- Audited as queue.adaptive_concurrency; every change of the limit is also in taskq.adaptive_changes.
create or replace function taskq.set_adaptive_concurrency(p_name text, p_min integer, p_max integer,
                                                          p_target_latency_ms integer, p_actor text)
returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  q taskq.queues;
  before jsonb;
  v_limit integer;
  v_reason text;
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_int('min', p_min, 1, 1000000);
  perform taskq.check_int('max', p_max, 1, 1000000);
  perform taskq.check_int('target_latency_ms', p_target_latency_ms, 1, 3600000);
  if p_min is null then
    if p_max is not null then
      perform taskq.invalid('max', 'needs min (a null min turns the adaptive limit off)');
    end if;
    if p_target_latency_ms is not null then
      perform taskq.invalid('target_latency_ms', 'needs min (a null min turns the adaptive limit off)');
    end if;
  else
    if p_max is null then
      perform taskq.invalid('max', 'is required with min');
    end if;
    if p_target_latency_ms is null then
      perform taskq.invalid('target_latency_ms', 'is required with min');
    end if;
    if p_max < p_min then
      perform taskq.invalid('max', format('must be at least min (%s, got %s)', p_min, p_max));
    end if;
  end if;
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  if p_min is null then
    if q.adaptive_min is not null then
      v_reason := format('turned off by %s', p_actor);
      update taskq.queues set max_running = adaptive_fixed_max_running, adaptive_min = null, adaptive_max = null,
        adaptive_target_latency_ms = null, adaptive_fixed_max_running = null, adaptive_slow_start = null,
        adaptive_decided_at = null, adaptive_reason = null, updated_at = now()
      where name = p_name returning * into q;
      delete from taskq.adaptive_samples where queue = p_name;
      perform taskq.adaptive_note(p_name, (before ->> 'max_running')::integer, q.max_running, v_reason, '{}', now());
    end if;
  else
    if q.adaptive_min is null then
      v_limit := p_min;
      v_reason := format('turned on by %s: starts at min %s', p_actor, p_min);
      update taskq.queues set adaptive_fixed_max_running = max_running, adaptive_slow_start = true
      where name = p_name;
    else
      v_limit := least(p_max, greatest(p_min, q.max_running));
      v_reason := format('bounds set to %s..%s by %s', p_min, p_max, p_actor);
    end if;
    update taskq.queues set max_running = v_limit, adaptive_min = p_min, adaptive_max = p_max,
      adaptive_target_latency_ms = p_target_latency_ms, adaptive_decided_at = now(), adaptive_reason = v_reason,
      updated_at = now()
    where name = p_name returning * into q;
    if v_limit is distinct from (before ->> 'max_running')::integer or before -> 'adaptive' = 'null'::jsonb then
      perform taskq.adaptive_note(p_name, (before ->> 'max_running')::integer, v_limit, v_reason,
        jsonb_build_object('min', p_min, 'max', p_max, 'target_latency_ms', p_target_latency_ms), now());
    end if;
  end if;
  perform taskq.audit(p_name, 'queue.adaptive_concurrency', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;
