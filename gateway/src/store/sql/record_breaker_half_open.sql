-- The claim that hands out a probe (jobs_claim) moves the breaker to half_open without an event of its
-- own; this records it on the probe job, like the other transitions, at the claim's time: the probe's
-- started_at, which the same claim has just set.
create or replace function taskq.record_breaker_half_open() returns trigger language plpgsql as $$
begin
  insert into taskq.job_events (job_id, event_type, data, created_at)
  select new.breaker_probe_job_id, 'breaker_half_open',
    jsonb_build_object('queue', new.name, 'probe_attempt', new.breaker_probe_attempt),
    coalesce((select j.started_at from taskq.live_jobs j where j.id = new.breaker_probe_job_id), now());
  return null;
end $$;
