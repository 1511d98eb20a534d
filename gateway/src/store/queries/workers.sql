-- The workers connected to the fleet (taskq.workers): each gateway's summary of its Claim streams.

-- name: WorkersFlush
-- plan: each call
select taskq.workers_flush($1::text, $2::jsonb, $3::integer);

-- name: WorkersList
select worker_id, gateway_id, queues, streams, max_jobs, concurrency, prefetch, held::int as held,
  floor(extract(epoch from last_poll_at) * 1000)::float8 as last_poll_ms, verdicts,
  floor(extract(epoch from refreshed_at) * 1000)::float8 as refreshed_ms
from taskq.list_workers();
