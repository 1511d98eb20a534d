-- Moves finished jobs still in taskq.live_jobs to taskq.job_history, a page at a time (p_limit rows):
-- jobs with an idempotency key (their settle finishes them in place: see taskq.jobs_settle), those a
-- lease expiry, TTL or cancel finished, and any a user's statement finished. Each call is its own
-- transaction and every row is in exactly one table at every moment, so a move interrupted anywhere
-- resumes at the next call. The maintenance leader calls it every tick. Returns the rows moved. Sequential scans off: its plan is made once per
-- connection, and made on a table with no finished job it read every live job at each tick.
create or replace function taskq.move_finished_jobs(p_limit integer) returns integer
language plpgsql volatile set enable_seqscan = off set jit = off as $$
declare
  v_ids bigint[];
  v_queues text[];
  v_keys text[];
  n integer;
begin
  select array_agg(p.id), array_agg(p.queue), array_agg(p.idempotency_key) into v_ids, v_queues, v_keys
  from (
    select j.id, j.queue, j.idempotency_key from taskq.live_jobs j
    where j.state in ('succeeded', 'failed', 'cancelled')
    order by j.finished_at limit p_limit
    for update skip locked
  ) p;
  if v_ids is null then return 0; end if;
  perform taskq.lock_idempotency_keys(v_queues, v_keys);
  with gone as (
    delete from taskq.live_jobs j where j.id = any(v_ids) returning j.*
  ), moved as (
    insert into taskq.job_history select * from gone returning 1
  ) select count(*) into n from moved;
  return n;
end $$;
