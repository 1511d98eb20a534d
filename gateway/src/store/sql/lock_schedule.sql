-- Locks the named schedule's row; no_data_found when there is none.
create or replace function taskq.lock_schedule(p_name text) returns taskq.schedules language plpgsql as $$
declare
  s taskq.schedules;
begin
  perform taskq.check_schedule_name(p_name);
  select * into s from taskq.schedules where name = p_name for update;
  if not found then
    raise exception using errcode = 'P0002', message = 'schedule ' || p_name || ' not found';
  end if;
  return s;
end $$;
