-- Every job, live or finished: the relation users SELECT in psql, and what every read of finished jobs
-- goes through. Live jobs (scheduled, queued, running) are in taskq.live_jobs, finished ones in
-- taskq.job_history. A finished job past the maintenance leader's retention is hidden here even while
-- its day's partition waits to be dropped, so every read agrees on what is kept.
-- Statements on the job path name taskq.live_jobs: a read of live jobs through this view would plan the
-- history too.
create or replace view taskq.jobs as
select * from taskq.live_jobs
union all
select * from taskq.job_history h
where h.finished_at >= taskq.retained_since() or h.finished_at is null;

-- Writes through the view (an INSERT, UPDATE or DELETE in psql) reach the table that holds the row:
-- taskq.route_job_write. Its defaults are the live table's, so an INSERT may leave out what an INSERT
-- into taskq.live_jobs may.
alter view taskq.jobs alter column id set default nextval(pg_get_serial_sequence('taskq.live_jobs', 'id')::regclass);
alter view taskq.jobs alter column priority set default 0;
alter view taskq.jobs alter column content_type set default '';
alter view taskq.jobs alter column headers set default '{}'::jsonb;
alter view taskq.jobs alter column attempt set default 0;
alter view taskq.jobs alter column cancel_requested set default false;
alter view taskq.jobs alter column attempt_floor set default 0;
