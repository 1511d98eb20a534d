-- The maintenance leader's care of taskq.job_history, every tick: records its retentionSeconds (which
-- taskq.jobs reads to hide finished jobs past it), makes today's and tomorrow's partitions (UTC), and
-- drops every day partition wholly past retention: a whole day's finished jobs go at once, with nothing
-- for vacuum to clean. Row by row it only deletes what no day partition holds (the default partition)
-- and, with retention 0 (nothing kept), what a lease expiry, TTL or cancel finished since the last tick
-- (the settle itself deletes what it finishes then), and the attempts of jobs that are gone. Returns the
-- rows deleted row by row, at most p_limit of each kind. A partition whose lock is not granted within lock_timeout is left for a later tick.
create or replace function taskq.keep_job_history(p_retention_seconds integer, p_now timestamptz, p_limit integer)
returns integer language plpgsql volatile set lock_timeout = '200ms' as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  v_cutoff timestamptz := v_now - p_retention_seconds * interval '1 second';
  v_today date := (v_now at time zone 'UTC')::date;
  v_part record;
  n integer := 0;
begin
  perform taskq.check_int('retention_seconds', p_retention_seconds, 0, 31536000);
  if not exists (select 1 from taskq.retention r where r.seconds = p_retention_seconds) then
    insert into taskq.retention as r (seconds) values (p_retention_seconds)
    on conflict (singleton) do update set seconds = excluded.seconds, updated_at = now();
  end if;
  begin
    perform taskq.add_history_partition(v_today);
    perform taskq.add_history_partition(v_today + 1);
  exception when lock_not_available then null;
  end;
  for v_part in
    select c.relname, to_date(substring(c.relname from '^job_history_(\d{8})$'), 'YYYYMMDD') as day
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'taskq.job_history'::regclass and c.relname ~ '^job_history_\d{8}$'
  loop
    continue when (v_part.day + 1)::timestamp at time zone 'UTC' > v_cutoff;
    begin
      execute format('drop table taskq.%I', v_part.relname);
    exception when lock_not_available then null;
    end;
  end loop;
  with gone as (
    delete from taskq.job_history_default h where h.ctid = any(array(
      select d.ctid from taskq.job_history_default d where d.finished_at < v_cutoff limit p_limit))
    returning 1
  ) select count(*) into n from gone;
  if p_retention_seconds = 0 and n < p_limit then
    with gone as (
      delete from taskq.job_history h where (h.tableoid, h.ctid) in (
        select d.tableoid, d.ctid from taskq.job_history d where d.finished_at < v_cutoff limit p_limit - n)
      returning 1
    ) select n + count(*) into n from gone;
  end if;
  -- A job's attempts (taskq.job_attempts) go with it: those past retention whose job is gone (its day
  -- dropped, or deleted), a page a tick. An attempt is never younger than its job's finish.
  with gone as (
    delete from taskq.job_attempts a where (a.job_id, a.attempt) in (
      select o.job_id, o.attempt from taskq.job_attempts o
      where o.finished_at < v_cutoff
        and not exists (select 1 from taskq.live_jobs l where l.id = o.job_id)
        and not exists (select 1 from taskq.job_history h where h.id = o.job_id)
      limit p_limit)
    returning 1
  ) select n + count(*) into n from gone;
  return n;
end $$;
