-- ramped_max_running(max_running, ramp_seconds, ramp_started_at, now): the queue's effective cap on
-- running jobs (gate 3). After a resume or a breaker close, a queue with ramp_seconds grows it from
-- near zero to max_running over the window (never below one job); otherwise max_running itself.
-- taskq.jobs_claim enforces it; explain reports it.
create or replace function taskq.ramped_max_running(p_max_running integer, p_ramp_seconds integer,
                                                    p_ramp_started_at timestamptz, p_now timestamptz)
returns integer language sql immutable as $$
  select case
    when p_ramp_seconds is not null and p_ramp_started_at is not null
         and p_now < p_ramp_started_at + p_ramp_seconds * interval '1 second'
    then greatest(1, ceil(p_max_running * greatest(0.01,
           extract(epoch from (p_now - p_ramp_started_at)) / p_ramp_seconds)))::int
    else p_max_running
  end
$$;
