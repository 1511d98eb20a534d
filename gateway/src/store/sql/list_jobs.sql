-- list_jobs(queue, state, limit, before_id): the queue's jobs in that state, or in every state when state
-- is null (so "the queue's jobs" needs no state named first: taskq job ls <queue>), newest first, without
-- payload or result bytes (their sizes instead); with before_id only jobs with an id below it (the next
-- page). limit defaults to 50, 1 to 1000.
create or replace function taskq.list_jobs(p_queue text, p_state text, p_limit integer default null,
                                           p_before_id bigint default null)
returns table (id bigint, state text, priority smallint, attempt integer, max_attempts integer, flow_key text,
               content_type text, payload_bytes integer, enqueued_at timestamptz, run_at timestamptz,
               started_at timestamptz, finished_at timestamptz, outcome text, last_error jsonb, worker_id text)
language plpgsql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  perform taskq.check_queue_name(p_queue);
  if p_state not in ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled') then
    perform taskq.invalid('state', 'must be scheduled, queued, running, succeeded, failed or cancelled (or null for every state)');
  end if;
  perform taskq.check_int('limit', p_limit, 1, 1000);
  return query
  select j.id, j.state, j.priority, j.attempt, j.max_attempts, j.flow_key, j.content_type,
    octet_length(j.payload), j.enqueued_at, j.run_at, j.started_at, j.finished_at, j.outcome, j.last_error,
    j.worker_id
  from taskq.jobs j
  where j.queue = p_queue and (p_state is null or j.state = p_state)
    and (p_before_id is null or j.id < p_before_id)
  order by j.id desc
  limit coalesce(p_limit, 50);
end $$;
