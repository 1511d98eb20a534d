-- taskq schema, version 21: finished jobs leave the live table for a history table partitioned by day.
--
-- Every job's life (queued -> running -> finished) left dead row versions and index entries in
-- taskq.jobs, and finished jobs stayed there for their retention: a claim stepped over the dead entries
-- of every job claimed since the last vacuum, and a table holding a day of finished jobs was vacuumed
-- rarely (autovacuum waits for 20 % of it to be dead). Now:
--
-- - taskq.live_jobs (this table, renamed) holds scheduled, queued and running jobs: its size follows
--   the backlog, so vacuum finds it small and often.
-- - taskq.job_history holds finished jobs (succeeded, failed, cancelled), moved in the statement that
--   finishes them. It is partitioned by finished_at, one partition a UTC day made ahead by the
--   maintenance leader (taskq.keep_job_history); retention drops whole partitions: no row-by-row
--   delete, nothing for vacuum to clean. A default partition takes a row no day partition covers.
-- - taskq.jobs becomes a view over both (sql/jobs.sql), so reads and psql's SELECTs see every job.
--
-- Finished rows already in the table stay until the maintenance leader moves them, a page at a time
-- (taskq.move_finished_jobs): each page is its own transaction, so an interrupted move resumes where it
-- stopped, and every job is in exactly one of the two tables at every moment.
alter table taskq.jobs rename to live_jobs;

create table taskq.job_history (like taskq.live_jobs including defaults) partition by range (finished_at);
alter table taskq.job_history add constraint job_history_state_check
  check (state in ('succeeded', 'failed', 'cancelled'));
create table taskq.job_history_default partition of taskq.job_history default;

-- Reads by id (GetJob, a settle sent again, cancel), a queue's finished jobs by time (counters,
-- activity), a queue's failed jobs (redrive, lists) and idempotency keys kept within retention.
create index job_history_id_idx on taskq.job_history (id);
create index job_history_queue_finished_idx on taskq.job_history (queue, finished_at);
create index job_history_failed_idx on taskq.job_history (queue, id) where state = 'failed';
create index job_history_idempotency_idx on taskq.job_history (queue, idempotency_key)
  where idempotency_key is not null;

-- The maintenance leader's retentionSeconds, so reads hide a finished job once it is past retention
-- even while its day's partition stays. No row: nothing hidden (no leader has run yet).
create table taskq.retention (
  singleton boolean primary key default true check (singleton),
  seconds integer not null check (seconds >= 0),
  updated_at timestamptz not null default now()
);

-- Every job under the old name from this commit on (sql/jobs.sql gives the view its final form), so a
-- gateway of the previous version never finds the name missing.
create view taskq.jobs as
select * from taskq.live_jobs
union all
select * from taskq.job_history;
