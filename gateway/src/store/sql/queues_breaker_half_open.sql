-- The half_open transition, recorded as a job event by record_breaker_half_open.
create or replace trigger queues_breaker_half_open after update of breaker_state on taskq.queues
for each row when (new.breaker_state = 'half_open' and old.breaker_state <> 'half_open'
                   and new.breaker_probe_job_id is not null)
execute function taskq.record_breaker_half_open();
