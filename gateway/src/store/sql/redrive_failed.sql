-- redrive_failed(queue, limit, actor, smear_seconds): moves up to `limit` (1 to 100,000) failed jobs
-- of the queue, oldest first, back to waiting with run_at uniform over [now, now + smear) (smear 0 to
-- 86,400; 0 = ready now). Each job gets its attempt budget again (the rule is taskq.redrive_jobs, which
-- retry_job shares).
-- Returns how many; audited as queue.redrive_failed. A queue never seen is not found (and gets no
-- audit row).
create or replace function taskq.redrive_failed(p_queue text, p_limit integer, p_actor text, p_smear_seconds integer)
returns bigint language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  v_now timestamptz := now();
  v_failed bigint;
  n bigint;
  v_ready bigint;
  v_ids bigint[];
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_queue_name(p_queue);
  if p_limit is null then perform taskq.invalid('limit', 'is required'); end if;
  perform taskq.check_int('limit', p_limit, 1, 100000);
  perform taskq.check_int('smear_seconds', p_smear_seconds, 0, 86400);
  perform taskq.require_known_queue(p_queue);
  select count(*) into v_failed from taskq.jobs where queue = p_queue and state = 'failed';
  -- Live failed jobs first (the maintenance leader has not moved them yet), then kept history, each
  -- locked, skipping any another verb holds; taskq.redrive_jobs puts them back.
  v_ids := array(
    select l.id from taskq.live_jobs l where l.queue = p_queue and l.state = 'failed'
    order by l.id limit p_limit for update skip locked);
  v_ids := v_ids || array(
    select h.id from taskq.job_history h
    where h.queue = p_queue and h.state = 'failed' and h.finished_at >= taskq.retained_since()
    order by h.id limit p_limit - cardinality(v_ids) for update skip locked);
  select count(*), count(*) filter (where r.state = 'queued') into n, v_ready
  from taskq.redrive_jobs(v_ids, p_smear_seconds, v_now) r;
  perform taskq.audit(p_queue, 'queue.redrive_failed', p_actor,
    jsonb_build_object('failed', v_failed),
    jsonb_build_object('failed', v_failed - n, 'redriven', n, 'limit', p_limit,
                       'smear_seconds', coalesce(p_smear_seconds, 0)));
  if v_ready > 0 then perform pg_notify('taskq_jobs', p_queue); end if;
  return n;
end $$;
