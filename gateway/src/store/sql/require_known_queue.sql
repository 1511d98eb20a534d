-- An operator verb on a queue name never seen (no settings, no jobs, no schedule feeding it) answers not
-- found, naming it, instead of creating the queue, so a typo (pause_queue('mial', ...)) makes no new
-- one. A queue with jobs or a schedule but no settings yet is known: the verb creates its row.
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
