-- list_breaker_events(queue, limit): the breaker's transitions, newest first: automatic ones from the
-- job events (opened, reopened, half_open, closed, with the job that caused them) and manual ones from
-- the audit log (trip_breaker, close_breaker, with the actor). limit defaults to 20, 1 to 200.
create or replace function taskq.list_breaker_events(p_queue text, p_limit integer default null)
returns table (event_type text, job_id bigint, actor text, data jsonb, created_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  perform taskq.check_queue_name(p_queue);
  perform taskq.check_int('limit', p_limit, 1, 200);
  return query
  select * from (
    (select e.event_type, e.job_id, null::text, e.data - 'queue', e.created_at from taskq.job_events e
     where e.data ->> 'queue' = p_queue and e.event_type like 'breaker\_%'
     order by e.created_at desc limit coalesce(p_limit, 20))
    union all
    (select a.event_type, null::bigint, a.actor, '{}'::jsonb, a.created_at from taskq.queue_audit a
     where a.queue = p_queue and a.event_type in ('queue.trip_breaker', 'queue.close_breaker')
     order by a.id desc limit coalesce(p_limit, 20))
  ) x
  order by x.created_at desc
  limit coalesce(p_limit, 20);
end $$;
