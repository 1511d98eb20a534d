-- Every schedule, by name (for operators and observers on psql).
create or replace function taskq.list_schedules() returns table (name text, settings jsonb) language sql stable
security definer set search_path = pg_catalog, taskq, pg_temp as $$
  select s.name, taskq.schedule_settings(s) from taskq.schedules s order by s.name
$$;
