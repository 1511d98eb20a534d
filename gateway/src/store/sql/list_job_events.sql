-- list_job_events(job_id): the job's events, oldest first (at most 1000).
create or replace function taskq.list_job_events(p_job_id bigint)
returns table (id bigint, event_type text, data jsonb, created_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  if p_job_id is null or p_job_id < 1 then perform taskq.invalid('job_id', 'must be a job id'); end if;
  return query
  select e.id, e.event_type, e.data, e.created_at from taskq.job_events e
  where e.job_id = p_job_id order by e.id limit 1000;
end $$;
