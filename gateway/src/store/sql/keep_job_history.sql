-- The maintenance leader's care of taskq.job_history, every tick: records its retentionSeconds (which
-- taskq.jobs reads to hide finished jobs past it), makes today's and tomorrow's partitions (UTC), and
-- drops every day partition wholly past retention: a whole day's finished jobs go at once, with nothing
-- for vacuum to clean. Row by row it only deletes what no day partition holds (the default partition)
-- and, with retention 0 (nothing kept), what a lease expiry, TTL or cancel finished since the last tick
-- (the settle itself deletes what it finishes then). A job's attempts go with it, whichever way.
-- Returns the jobs deleted row by row, at most p_limit. A partition whose lock is not granted within
-- lock_timeout is left for a later tick.
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
      -- With the day go its jobs' attempts (taskq.job_attempts): those finished by the day's end whose job
      -- is in it, one probe of the day's ids each. In the same subtransaction as the drop, so a drop that
      -- waits too long keeps them too.
      execute format('delete from taskq.job_attempts a where a.finished_at < %L
                        and exists (select 1 from taskq.%I p where p.id = a.job_id)',
                     (v_part.day + 1)::timestamp at time zone 'UTC', v_part.relname);
      execute format('drop table taskq.%I', v_part.relname);
    exception when lock_not_available then null;
    end;
  end loop;
  with gone as (
    delete from taskq.job_history_default h where h.ctid = any(array(
      select d.ctid from taskq.job_history_default d where d.finished_at < v_cutoff limit p_limit))
    returning h.id
  ), attempts as (
    delete from taskq.job_attempts a using gone g where a.job_id = g.id
  ) select count(*) into n from gone;
  if p_retention_seconds = 0 and n < p_limit then
    with gone as (
      delete from taskq.job_history h where (h.tableoid, h.ctid) in (
        select d.tableoid, d.ctid from taskq.job_history d where d.finished_at < v_cutoff limit p_limit - n)
      returning h.id
    ), attempts as (
      delete from taskq.job_attempts a using gone g where a.job_id = g.id
    ) select n + count(*) into n from gone;
  end if;
  return n;
end $$;
