-- Live levels and throughput per queue (every known queue: taskq.known_queues). Throughput counts jobs that finished (succeeded, or failed for good) in
-- the last minute / hour: finished jobs are kept for the retention window, so a retention shorter
-- than an hour undercounts the hour. throttled_last_hour is what the gates declined in the last hour,
-- fleet-wide, by reason ({"THROTTLE": 12, "PAUSED": 3, ...}, {} when nothing was), counted in whole
-- minutes (the current one included) from taskq.queue_throttled, where each gateway adds its tallies.
create or replace view taskq.queue_counters as
with names as (
  select k.name as queue from taskq.known_queues k
)
select n.queue,
  (select count(*) from taskq.live_jobs j where j.queue = n.queue and j.state = 'queued') as queued,
  (select count(*) from taskq.live_jobs j where j.queue = n.queue and j.state = 'scheduled') as scheduled,
  (select count(*) from taskq.live_jobs j where j.queue = n.queue and j.state = 'running') as running,
  t.succeeded_last_minute, t.failed_last_minute, t.succeeded_last_hour, t.failed_last_hour,
  (select round(extract(epoch from now() - min(j.run_at))::numeric, 3) from taskq.live_jobs j
    where j.queue = n.queue and j.state = 'queued') as oldest_ready_seconds,
  (select coalesce(jsonb_object_agg(r.reason, r.n), '{}'::jsonb) from (
    select th.reason, sum(th.count) as n from taskq.queue_throttled th
    where th.queue = n.queue and th.minute > date_trunc('minute', now()) - interval '1 hour'
    group by th.reason
  ) r) as throttled_last_hour
from names n
cross join lateral (
  select
    count(*) filter (where j.state = 'succeeded' and j.finished_at > now() - interval '1 minute') as succeeded_last_minute,
    count(*) filter (where j.state = 'failed' and j.finished_at > now() - interval '1 minute') as failed_last_minute,
    count(*) filter (where j.state = 'succeeded') as succeeded_last_hour,
    count(*) filter (where j.state = 'failed') as failed_last_hour
  from taskq.jobs j
  where j.queue = n.queue and j.state in ('succeeded', 'failed') and j.finished_at > now() - interval '1 hour'
) t;
