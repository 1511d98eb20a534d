-- Raises no_data_found (P0002) naming the queue unless it has settings, jobs or a schedule. The jobs
-- probe may scan: it runs only while the name has no settings row, and the first verb creates the row.
create or replace function taskq.require_known_queue(p_name text) returns void language plpgsql as $$
begin
  perform taskq.check_queue_name(p_name);
  if not exists (select 1 from taskq.queues where name = p_name)
     and not exists (select 1 from taskq.jobs where queue = p_name)
     and not exists (select 1 from taskq.schedules where queue = p_name) then
    raise exception using errcode = 'P0002',
      message = 'queue ' || p_name || ' not found (no jobs, no settings): ensure_queue creates it';
  end if;
end $$;
