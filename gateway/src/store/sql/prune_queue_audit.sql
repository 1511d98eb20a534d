-- prune_queue_audit(older_than_hours): deletes audit rows older than that (1 to 876,000 hours, 100
-- years); returns how many. Safe to run on a schedule.
create or replace function taskq.prune_queue_audit(p_older_than_hours integer) returns bigint language plpgsql
security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  n bigint;
begin
  if p_older_than_hours is null then perform taskq.invalid('older_than_hours', 'is required'); end if;
  perform taskq.check_int('older_than_hours', p_older_than_hours, 1, 876000);
  with gone as (
    delete from taskq.queue_audit where created_at < now() - p_older_than_hours * interval '1 hour' returning 1
  ) select count(*) into n from gone;
  return n;
end $$;
