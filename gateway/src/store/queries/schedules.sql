-- Schedules and redrive. The verbs are SQL functions (sql/); these statements call them and
-- feed the leader's scheduler.

-- name: ScheduleCreate
select taskq.create_schedule($1::text, $2::jsonb, $3::bytea, $4::text) as settings;

-- name: ScheduleUpdate
select taskq.update_schedule($1::text, $2::jsonb, $3::bytea, $4::text) as settings;

-- name: ScheduleDelete
select taskq.delete_schedule($1::text, $2::text) as settings;

-- name: SchedulePause
select taskq.pause_schedule($1::text, $2::text) as settings;

-- name: ScheduleResume
select taskq.resume_schedule($1::text, $2::text) as settings;

-- name: ScheduleSetSmear
select taskq.set_schedule_smear($1::text, taskq.arg_int('smear_seconds', $2::numeric), $3::text) as settings;

-- name: SchedulesList
select settings from taskq.list_schedules() where $1::text is null or name = $1::text;

-- name: SchedulePayload
select payload from taskq.schedules where name = $1::text;

-- name: SchedulesActive
-- What the scheduler plans from: every schedule not paused.
select id::text as id, name, cron, time_zone, smear_offset_ms::float8 as smear_offset_ms, missed_policy,
  last_slot
from taskq.schedules where not paused order by id;

-- name: ScheduleFire
select taskq.fire_schedule($1::bigint, $2::timestamptz, $3::timestamptz, $4::int, $5::timestamptz) as job_id;

-- name: ScheduleSkip
-- Marks missed slots done without firing (the skip policy).
update taskq.schedules set last_slot = $2::timestamptz where id = $1::bigint and last_slot < $2::timestamptz;

-- name: ScheduleFiresPrune
-- Fired-slot keys older than a week: by then last_slot alone keeps those slots from firing again.
delete from taskq.schedule_fires f where f.ctid = any(array(
  select ctid from taskq.schedule_fires
  where fired_at < coalesce($2::timestamptz, now()) - interval '7 days' limit $1::int))
returning 1;

-- name: QueueRedriveFailed
select taskq.redrive_failed($1::text, taskq.arg_int('limit', $2::numeric), $3::text, taskq.arg_int('smear_seconds', $4::numeric))::text as redriven;

-- name: JobRetry
-- plan: each call
select taskq.retry_job(taskq.arg_bigint('job_id', $1::numeric), $2::text) as queue;

-- name: DbNow
-- The database's clock: schedules are planned against it, never a gateway's.
select now() as now;
