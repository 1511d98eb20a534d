-- adaptive_step(...): the adaptive limit's law, one decision from the settles of one interval. Pure, so
-- its tests need no clock; taskq.adapt_concurrency applies it once per interval per queue.
--
-- AIMD, as TCP's congestion control and Netflix's concurrency-limits do it, with latency against an
-- operator's target as the congestion signal:
--   no settles since the last decision     hold: nothing to judge by.
--   failures >= 5% of the settles          x0.7: a failure burst (429s, timeouts) is the loudest signal.
--   average latency over the target        x(target / latency), kept within x0.7..x0.9: a small excess
--                                          backs off a little, a large one as far as a failure burst.
--   average latency within 5% of target    hold: the limit is where the target puts it. Growing here
--                                          would cross the target at the next step and back off, a
--                                          sawtooth around the level instead of resting at it.
--   otherwise, with the limit in use       +1 (in slow start x1.25, at least +1), up to max. In use:
--                                          running >= 80% of the limit; an idle queue's limit does not
--                                          grow, or it would say nothing about what the downstream takes.
-- Every decrease takes at least one and stops at min; slow start ends at the first decrease.
-- p_running: the queue's running jobs now; p_cap: max_running as the slow-start ramp scales it now.
create or replace function taskq.adaptive_step(p_limit integer, p_min integer, p_max integer, p_target_ms integer,
                                               p_slow_start boolean, p_settles integer, p_failures integer,
                                               p_avg_latency_ms float8, p_running integer, p_cap integer,
                                               out next_limit integer, out slow_start boolean, out reason text)
language plpgsql immutable as $$
declare
  v_limit integer := least(p_max, greatest(p_min, coalesce(p_limit, p_min)));
  v_ms integer := round(coalesce(p_avg_latency_ms, 0));
  v_factor float8;
begin
  next_limit := v_limit;
  slow_start := coalesce(p_slow_start, false);
  if coalesce(p_settles, 0) = 0 then
    reason := 'no settles since the last decision';
    return;
  end if;
  if p_failures::float8 / p_settles >= 0.05 then
    v_factor := 0.7;
    reason := format('failures %s of %s settles (%s%%)', p_failures, p_settles,
                     round(100.0 * p_failures / p_settles));
  elsif p_avg_latency_ms > p_target_ms then
    v_factor := greatest(0.7, least(0.9, p_target_ms / p_avg_latency_ms));
    reason := format('latency %s ms over target %s', v_ms, p_target_ms);
  end if;
  if v_factor is not null then
    if v_limit <= p_min then
      reason := reason || format(', at min %s', p_min);
      return;
    end if;
    next_limit := greatest(p_min, least(v_limit - 1, floor(v_limit * v_factor)::integer));
    slow_start := false;
    return;
  end if;
  if p_avg_latency_ms > p_target_ms * 0.95 then
    reason := format('latency %s ms within 5%% of target %s', v_ms, p_target_ms);
    return;
  end if;
  reason := format('latency %s ms under target %s', v_ms, p_target_ms);
  if p_running < ceil(v_limit * 0.8) then
    reason := reason || format(', limit not in use (%s running of %s%s)', p_running, v_limit,
      case when p_cap < v_limit then format(', the ramp''s cap %s', p_cap) else '' end);
    return;
  end if;
  if v_limit >= p_max then
    reason := reason || format(', at max %s', p_max);
    return;
  end if;
  next_limit := least(p_max, case when slow_start then greatest(v_limit + 1, ceil(v_limit * 1.25)::integer)
                                  else v_limit + 1 end);
  reason := reason || case when slow_start then ', slow start' else '' end;
end $$;
