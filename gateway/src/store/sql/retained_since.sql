-- The oldest finish time a read still shows: the maintenance leader's retentionSeconds ago
-- (taskq.retention), or everything before any leader has recorded it. Finished jobs before it wait
-- for their day's partition to be dropped, hidden. Security definer: a view that calls it (taskq.jobs,
-- read by an observer's queue_counters) calls it as the reader, who has no privilege on taskq.retention.
create or replace function taskq.retained_since() returns timestamptz
language sql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
  select now() - coalesce((select r.seconds from taskq.retention r), 1e9) * interval '1 second';
$$;
