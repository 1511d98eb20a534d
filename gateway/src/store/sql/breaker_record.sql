-- The circuit breaker is fleet-wide: its state is the queue's row, so every gateway sees one breaker. It
-- is configured when breaker_failure_threshold is not null. Triggers: streak (always on with the
-- breaker), rate and latency (each optional, over the rolling windows of taskq.breaker_samples). States:
-- closed -> open (a trigger fired, or a manual trip) -> half_open (the cooldown is over and one probe
-- job was handed out, by jobs_claim) -> closed (enough probe successes; starts the ramp, and restarts an
-- adaptive limit from its min: taskq.adaptive_restart) or open again
-- (the probe failed, or its lease expired: breaker_probe_lost). Every failed attempt counts as a
-- failure (retryable or not: the downstream failed either way); a cancelled settle counts as neither.
-- Automatic transitions are recorded as events on the job whose settle caused them.
--
-- Records settles of queues with a breaker and runs the state machine. Arrays are parallel, one entry
-- per applied settle: kind is 'success' | 'failure' | 'cancel' | 'release'. Queues are locked in name order, so
-- concurrent settle batches never deadlock. Returns the number of transitions.
create or replace function taskq.breaker_record(p_queues text[], p_ids bigint[], p_attempts integer[], p_kinds text[],
                                                p_latency_ms integer[], p_now timestamptz) returns integer
language plpgsql as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  r record;
  q taskq.queues;
  cur text := null;
  failed boolean;
  trig jsonb;
  n integer;
  nfail integer;
  avg_ms double precision;
  transitions integer := 0;
begin
  for r in
    select * from unnest(p_queues, p_ids, p_attempts, p_kinds, p_latency_ms) as t(queue, id, attempt, kind, latency_ms)
    order by t.queue, t.id
  loop
    if cur is distinct from r.queue then
      select * into q from taskq.queues where name = r.queue for update;
      cur := r.queue;
    end if;
    continue when q.breaker_failure_threshold is null;
    if r.kind in ('cancel', 'release') then
      -- A cancelled or released probe frees the probe slot without counting either way.
      if q.breaker_state = 'half_open' and q.breaker_probe_job_id = r.id and q.breaker_probe_attempt = r.attempt then
        update taskq.queues set breaker_probe_job_id = null, breaker_probe_attempt = null
        where name = r.queue returning * into q;
        perform pg_notify('taskq_queues', r.queue);
      end if;
      continue;
    end if;
    failed := r.kind = 'failure';
    if q.breaker_rate_failure_ratio is not null or q.breaker_latency_threshold_ms is not null then
      insert into taskq.breaker_samples (queue, at, failed, latency_ms)
      values (r.queue, v_now, failed, greatest(0, coalesce(r.latency_ms, 0)));
    end if;
    q.breaker_failure_streak := case when failed then q.breaker_failure_streak + 1 else 0 end;
    if q.breaker_state = 'closed' then
      trig := null;
      if q.breaker_failure_streak >= q.breaker_failure_threshold then
        trig := jsonb_build_object('trigger', 'streak', 'failure_streak', q.breaker_failure_streak,
                                   'failure_threshold', q.breaker_failure_threshold);
      end if;
      -- The rate is evaluated after every recorded settle, success or failure, once the window holds
      -- min_volume settles (as Resilience4j does): a success that completes the minimum volume of a
      -- window already past the ratio trips it, rather than leaving the breaker closed until the next failure.
      if trig is null and q.breaker_rate_failure_ratio is not null then
        select count(*), count(*) filter (where s.failed) into n, nfail from taskq.breaker_samples s
        where s.queue = r.queue and s.at > v_now - q.breaker_rate_window_seconds * interval '1 second'
          and s.at <= v_now;
        if n >= q.breaker_rate_min_volume and nfail::float8 / n >= q.breaker_rate_failure_ratio then
          trig := jsonb_build_object('trigger', 'rate', 'failures', nfail, 'settles', n,
            'failure_ratio', round((nfail::numeric / n), 4), 'threshold_ratio', q.breaker_rate_failure_ratio,
            'window_seconds', q.breaker_rate_window_seconds, 'min_volume', q.breaker_rate_min_volume);
        end if;
      end if;
      if trig is null and q.breaker_latency_threshold_ms is not null then
        select count(*), avg(s.latency_ms) into n, avg_ms from taskq.breaker_samples s
        where s.queue = r.queue and s.at > v_now - q.breaker_latency_window_seconds * interval '1 second'
          and s.at <= v_now;
        if n >= q.breaker_latency_min_volume and avg_ms >= q.breaker_latency_threshold_ms then
          trig := jsonb_build_object('trigger', 'latency', 'avg_latency_ms', round(avg_ms::numeric, 1),
            'settles', n, 'threshold_ms', q.breaker_latency_threshold_ms,
            'window_seconds', q.breaker_latency_window_seconds, 'min_volume', q.breaker_latency_min_volume);
        end if;
      end if;
      if trig is not null then
        update taskq.queues set breaker_state = 'open', breaker_tripped_at = v_now,
          breaker_opened_total = breaker_opened_total + 1, breaker_failure_streak = q.breaker_failure_streak,
          breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_probe_successes = 0
        where name = r.queue returning * into q;
        insert into taskq.job_events (job_id, event_type, data, created_at)
        values (r.id, 'breaker_opened', trig || jsonb_build_object('queue', r.queue), v_now);
        perform pg_notify('taskq_queues', r.queue);
        transitions := transitions + 1;
        continue;
      end if;
    elsif q.breaker_state = 'half_open' and q.breaker_probe_job_id = r.id and q.breaker_probe_attempt = r.attempt then
      if failed then
        update taskq.queues set breaker_state = 'open', breaker_tripped_at = v_now,
          breaker_opened_total = breaker_opened_total + 1, breaker_failure_streak = q.breaker_failure_streak,
          breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_probe_successes = 0
        where name = r.queue returning * into q;
        insert into taskq.job_events (job_id, event_type, data, created_at)
        values (r.id, 'breaker_reopened', jsonb_build_object('queue', r.queue, 'trigger', 'probe_failed',
          'cooldown_seconds', q.breaker_cooldown_seconds), v_now);
      elsif q.breaker_probe_successes + 1 >= q.breaker_half_open_successes then
        update taskq.queues set breaker_state = 'closed', breaker_failure_streak = 0,
          breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_probe_successes = 0,
          ramp_started_at = case when ramp_seconds is not null then v_now else ramp_started_at end
        where name = r.queue returning * into q;
        delete from taskq.breaker_samples where queue = r.queue;
        perform taskq.adaptive_restart(r.queue, v_now, 'the breaker closed');
        insert into taskq.job_events (job_id, event_type, data, created_at)
        values (r.id, 'breaker_closed', jsonb_build_object('queue', r.queue,
          'probe_successes', q.breaker_half_open_successes), v_now);
      else
        -- One more probe to go: the slot is free for the next claim.
        update taskq.queues set breaker_probe_successes = breaker_probe_successes + 1,
          breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_failure_streak = 0
        where name = r.queue returning * into q;
      end if;
      perform pg_notify('taskq_queues', r.queue);
      transitions := transitions + 1;
      continue;
    end if;
    update taskq.queues set breaker_failure_streak = q.breaker_failure_streak where name = r.queue;
  end loop;
  return transitions;
end $$;
