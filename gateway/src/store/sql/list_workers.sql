-- list_workers(now): every worker connected to any gateway (rows of taskq.workers not lapsed), with the
-- jobs it holds now: running jobs leased to its worker id, fleet-wide (with prefetch, some of them wait
-- in its buffer for a free slot). Ordered by worker id, then gateway.
create or replace function taskq.list_workers(p_now timestamptz default null)
returns table (worker_id text, gateway_id text, queues text[], streams integer, max_jobs integer,
               concurrency integer, prefetch integer, held bigint, last_poll_at timestamptz,
               verdicts jsonb, refreshed_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  v_now timestamptz := coalesce(p_now, now());
begin
  return query
  with live as (
    select * from taskq.workers w where w.expires_at > v_now
  ), held as (
    -- Running jobs of the listed workers only, counted once per worker id.
    select j.worker_id, count(*) as n from taskq.live_jobs j
    where j.state = 'running' and j.worker_id in (select l.worker_id from live l)
    group by j.worker_id
  )
  select l.worker_id, l.gateway_id, l.queues, l.streams, l.max_jobs, l.concurrency, l.prefetch,
         coalesce(h.n, 0), l.last_poll_at, l.verdicts, l.refreshed_at
  from live l left join held h on h.worker_id = l.worker_id
  order by l.worker_id, l.gateway_id;
end $$;
