-- workers_flush(gateway, workers, ttl_ms, now): replaces the gateway's rows of taskq.workers with
-- `workers` (a JSON array of {worker_id, queues, streams, max_jobs, concurrency, prefetch,
-- last_poll_ms, verdicts}), each lapsing ttl_ms from now, and prunes every lapsed row (of any gateway).
-- One statement per gateway every few seconds, not one per poll. Internal to the gateway: not granted
-- to any operator role.
create or replace function taskq.workers_flush(p_gateway text, p_workers jsonb, p_ttl_ms integer,
                                               p_now timestamptz default null)
returns void language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  v_now timestamptz := coalesce(p_now, now());
begin
  delete from taskq.workers w
  where w.expires_at <= v_now
     or (w.gateway_id = p_gateway and w.worker_id <> all(
           array(select e->>'worker_id' from jsonb_array_elements(p_workers) e)));
  insert into taskq.workers as w (gateway_id, worker_id, queues, streams, max_jobs, concurrency, prefetch,
                                  last_poll_at, verdicts, refreshed_at, expires_at)
  select p_gateway, r.worker_id, r.queues, r.streams, r.max_jobs, r.concurrency, r.prefetch,
         to_timestamp(r.last_poll_ms / 1000.0), coalesce(r.verdicts, '{}'), v_now,
         v_now + p_ttl_ms * interval '1 millisecond'
  from jsonb_to_recordset(p_workers) as r(worker_id text, queues text[], streams integer, max_jobs integer,
                                          concurrency integer, prefetch integer, last_poll_ms float8,
                                          verdicts jsonb)
  on conflict (gateway_id, worker_id) do update set
    queues = excluded.queues, streams = excluded.streams, max_jobs = excluded.max_jobs,
    concurrency = excluded.concurrency, prefetch = excluded.prefetch, last_poll_at = excluded.last_poll_at,
    verdicts = excluded.verdicts, refreshed_at = excluded.refreshed_at, expires_at = excluded.expires_at;
end $$;
