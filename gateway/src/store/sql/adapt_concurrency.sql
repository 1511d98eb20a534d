-- adapt_concurrency(now): the adaptive limit's controller, fleet-wide. Every gateway calls it from its
-- maintenance loop (four times a second); one caller at a time runs it (a transaction-level advisory
-- lock: the others return at once), and it decides for each adaptive queue that is due
-- (taskq.adaptive_due: its interval has passed, or a failure burst came sooner). Whichever gateway
-- calls, a queue gets one decision per interval (or sooner, on a burst), each from the settles recorded
-- since the one before (taskq.adaptive_samples, taken here) under taskq.adaptive_step's law.
--
-- The decision is written as max_running: taskq.jobs_claim enforces it under the queue's row lock as it
-- enforces an operator's cap, and a change notifies taskq_queues as every settings verb does, so every
-- gateway's cached settings follow. A paused queue, and one whose breaker is open or half-open, holds
-- its limit (the breaker's close restarts it from min: taskq.adaptive_restart). Each change is kept in
-- taskq.adaptive_changes. Returns the number of queues whose limit changed.
create or replace function taskq.adapt_concurrency(p_now timestamptz) returns integer
language plpgsql as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  v_name text;
  q taskq.queues;
  s record;
  st record;
  v_running integer;
  v_cap integer;
  v_changes integer := 0;
begin
  -- Two-key advisory locks are a space apart from the single-key ones (see lock_idempotency_keys).
  if not pg_try_advisory_xact_lock(7312, 1) then
    return 0;
  end if;
  for v_name in
    select g.name from taskq.queues g where g.adaptive_min is not null and taskq.adaptive_due(g, v_now)
    order by g.name
  loop
    -- The row lock waits out a claim counting against the cap (it holds the row a moment), and a verb
    -- that turned adaptive off or changed it meanwhile is read here.
    select * into q from taskq.queues g where g.name = v_name for update;
    continue when not taskq.adaptive_due(q, v_now);
    -- The interval's first part is taken, not read (taskq.adaptive_unread).
    with taken as (
      delete from taskq.adaptive_samples a where a.queue = v_name and a.at <= v_now
      returning a.at, a.settles, a.failures, a.latency_ms_sum
    )
    select coalesce(sum(t.settles), 0)::int as settles, coalesce(sum(t.failures), 0)::int as failures,
           sum(t.latency_ms_sum)::float8 / nullif(sum(t.settles), 0) as avg_ms
    into s from taken t
    where q.adaptive_decided_at is null
      or t.at > q.adaptive_decided_at + taskq.adaptive_unread(q.adaptive_target_latency_ms, q.adaptive_slow_start);
    if q.paused or q.breaker_state <> 'closed' then
      update taskq.queues set adaptive_decided_at = v_now,
        adaptive_reason = case when q.paused then 'held while the queue is paused'
                               else format('held while the breaker is %s', replace(q.breaker_state, '_', '-')) end
      where name = v_name;
      continue;
    end if;
    select count(*)::int into v_running from taskq.live_jobs j where j.queue = v_name and j.state = 'running';
    v_cap := taskq.ramped_max_running(q.max_running, q.ramp_seconds, q.ramp_started_at, v_now);
    st := taskq.adaptive_step(q.max_running, q.adaptive_min, q.adaptive_max, q.adaptive_target_latency_ms,
                              q.adaptive_slow_start, s.settles, s.failures, s.avg_ms, v_running, v_cap);
    update taskq.queues set max_running = st.next_limit, adaptive_slow_start = st.slow_start,
      adaptive_decided_at = v_now, adaptive_reason = st.reason
    where name = v_name;
    if st.next_limit is distinct from q.max_running then
      perform taskq.adaptive_note(v_name, q.max_running, st.next_limit, st.reason,
        jsonb_build_object('settles', s.settles, 'failures', s.failures,
          'avg_latency_ms', round(s.avg_ms::numeric, 1), 'running', v_running), v_now);
      perform pg_notify('taskq_queues', v_name);
      v_changes := v_changes + 1;
    end if;
  end loop;
  return v_changes;
end $$;
