-- count_jobs(queue, state): how many jobs of the queue are in that state, or in any state when state is
-- null (the total ListJobs pages).
create or replace function taskq.count_jobs(p_queue text, p_state text) returns bigint
language plpgsql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  n bigint;
begin
  perform taskq.check_queue_name(p_queue);
  if p_state not in ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled') then
    perform taskq.invalid('state', 'must be scheduled, queued, running, succeeded, failed or cancelled (or null for every state)');
  end if;
  select count(*) into n from taskq.jobs j where j.queue = p_queue and (p_state is null or j.state = p_state);
  return n;
end $$;
