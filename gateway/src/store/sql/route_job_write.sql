-- A write through the view taskq.jobs, applied to the table that holds the row: a finished job
-- (succeeded, failed, cancelled) lives in taskq.job_history, any other in taskq.live_jobs. An UPDATE that
-- finishes a job, or redrives one, moves it. Row by row and not on any path a gateway takes: it is for
-- psql.
create or replace function taskq.route_job_write() returns trigger
language plpgsql set search_path = pg_catalog, taskq, pg_temp as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    delete from taskq.live_jobs where id = old.id;
    if not found then delete from taskq.job_history where id = old.id; end if;
    if tg_op = 'DELETE' then return old; end if;
  end if;
  if new.state in ('succeeded', 'failed', 'cancelled') then
    insert into taskq.job_history select new.*;
  else
    insert into taskq.live_jobs overriding system value select new.*;
  end if;
  return new;
end $$;
