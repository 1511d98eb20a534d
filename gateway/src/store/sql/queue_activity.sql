-- queue_activity(queue, minutes): one row per minute of the last `minutes` (1 to 60, default 15),
-- oldest first, the current minute included: claims (jobs whose latest attempt started that minute:
-- a retried job counts its latest claim only), jobs finished that minute by outcome with their
-- run time (finished_at - started_at, average and max, in ms), and the throttled verdicts of that
-- minute by reason, fleet-wide.
create or replace function taskq.queue_activity(p_queue text, p_minutes integer default null)
returns table (minute timestamptz, claimed bigint, succeeded bigint, failed bigint, cancelled bigint,
               avg_run_ms double precision, max_run_ms double precision, throttled jsonb)
language plpgsql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  v_from timestamptz;
begin
  perform taskq.check_queue_name(p_queue);
  perform taskq.check_int('minutes', p_minutes, 1, 60);
  v_from := date_trunc('minute', now()) - (coalesce(p_minutes, 15) - 1) * interval '1 minute';
  return query
  with recent as (
    -- A job that started in the window has since finished (finished_at >= started_at) or is still
    -- running or waiting for a retry: each branch has an index.
    select j.state, j.started_at, j.finished_at from taskq.jobs j
    where j.queue = p_queue and j.state in ('succeeded', 'failed', 'cancelled') and j.finished_at >= v_from
    union all
    select j.state, j.started_at, j.finished_at from taskq.live_jobs j
    where j.queue = p_queue and j.state in ('running', 'queued', 'scheduled') and j.started_at >= v_from
  ), claims as (
    select date_trunc('minute', r.started_at) as m, count(*) as n from recent r
    where r.started_at >= v_from group by 1
  ), finishes as (
    select date_trunc('minute', r.finished_at) as m,
      count(*) filter (where r.state = 'succeeded') as succeeded,
      count(*) filter (where r.state = 'failed') as failed,
      count(*) filter (where r.state = 'cancelled') as cancelled,
      avg(extract(epoch from r.finished_at - r.started_at) * 1000)
        filter (where r.state in ('succeeded', 'failed') and r.started_at is not null) as avg_ms,
      max(extract(epoch from r.finished_at - r.started_at) * 1000)
        filter (where r.state in ('succeeded', 'failed') and r.started_at is not null) as max_ms
    from recent r where r.finished_at >= v_from group by 1
  ), throttles as (
    select th.minute as m, jsonb_object_agg(th.reason, th.count) as t from taskq.queue_throttled th
    where th.queue = p_queue and th.minute >= v_from group by 1
  )
  select m.m, coalesce(c.n, 0), coalesce(f.succeeded, 0), coalesce(f.failed, 0), coalesce(f.cancelled, 0),
    round(f.avg_ms, 1)::float8, round(f.max_ms, 1)::float8, coalesce(t.t, '{}'::jsonb)
  from generate_series(v_from, date_trunc('minute', now()), interval '1 minute') as m(m)
  left join claims c on c.m = m.m
  left join finishes f on f.m = m.m
  left join throttles t on t.m = m.m
  order by m.m;
end $$;
