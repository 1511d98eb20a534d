-- The partition of taskq.job_history for one UTC day, made if missing. Rows the default partition took
-- for that day (a finish before the day's partition existed) move into it, so attaching it never fails.
-- Returns whether it made one. Waits at most lock_timeout for the parent table: a later tick tries again.
create or replace function taskq.add_history_partition(p_day date) returns boolean
language plpgsql volatile set lock_timeout = '200ms' as $$
declare
  v_name text := 'job_history_' || to_char(p_day, 'YYYYMMDD');
  v_from timestamptz := p_day::timestamp at time zone 'UTC';
  v_to timestamptz := (p_day + 1)::timestamp at time zone 'UTC';
begin
  if to_regclass('taskq.' || v_name) is not null then return false; end if;
  if not exists (select 1 from taskq.job_history_default d where d.finished_at >= v_from and d.finished_at < v_to) then
    execute format('create table taskq.%I partition of taskq.job_history for values from (%L) to (%L)',
                   v_name, v_from, v_to);
    return true;
  end if;
  execute format('create table taskq.%I (like taskq.job_history including defaults including constraints)', v_name);
  execute format('with gone as (delete from taskq.job_history_default d where d.finished_at >= %L and d.finished_at < %L returning d.*) insert into taskq.%I select * from gone',
                 v_from, v_to, v_name);
  execute format('alter table taskq.job_history attach partition taskq.%I for values from (%L) to (%L)',
                 v_name, v_from, v_to);
  return true;
end $$;
