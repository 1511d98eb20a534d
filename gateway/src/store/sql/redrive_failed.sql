-- redrive_failed(queue, limit, actor, smear_seconds): moves up to `limit` (1 to 100,000) failed jobs
-- of the queue, oldest first, back to waiting with run_at uniform over [now, now + smear) (smear 0 to
-- 86,400; 0 = ready now). Each job gets its attempt budget again: attempt keeps counting (it fences
-- settles from the job's earlier life) and max_attempts is raised by the attempts already spent.
-- Returns how many; audited as queue.redrive_failed. A queue never seen is not found (and gets no
-- audit row).
create or replace function taskq.redrive_failed(p_queue text, p_limit integer, p_actor text, p_smear_seconds integer)
returns bigint language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  v_now timestamptz := now();
  v_failed bigint;
  n bigint;
  v_ready bigint;
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_queue_name(p_queue);
  if p_limit is null then perform taskq.invalid('limit', 'is required'); end if;
  perform taskq.check_int('limit', p_limit, 1, 100000);
  perform taskq.check_int('smear_seconds', p_smear_seconds, 0, 86400);
  perform taskq.require_known_queue(p_queue);
  select count(*) into v_failed from taskq.jobs where queue = p_queue and state = 'failed';
  -- A failed job is ready again in the live table: updated in place if the maintenance leader has not
  -- moved it to taskq.job_history yet (taskq.move_finished_jobs), else moved back. Its attempts start over.
  with in_place as (
    update taskq.live_jobs j set
      run_at = v_now + random() * coalesce(p_smear_seconds, 0) * interval '1 second',
      state = case when coalesce(p_smear_seconds, 0) = 0 then 'queued' else 'scheduled' end,
      max_attempts = j.attempt + (j.max_attempts - j.attempt_floor),
      attempt_floor = j.attempt,
      finished_at = null, outcome = null, result = null, lease_deadline = null, lease_ms = null,
      worker_id = null, started_at = null, cancel_requested = false
    where j.id = any(array(
      select l.id from taskq.live_jobs l where l.queue = p_queue and l.state = 'failed'
      order by l.id limit p_limit for update skip locked))
    returning j.state
  ) select count(*), count(*) filter (where state = 'queued') into n, v_ready from in_place;
  with picked as (
    select h.id from taskq.job_history h
    where h.queue = p_queue and h.state = 'failed' and h.finished_at >= taskq.retained_since()
    order by h.id limit p_limit - n for update skip locked
  ), gone as (
    delete from taskq.job_history h using picked where h.id = picked.id returning h.*
  ), back as (
    insert into taskq.live_jobs overriding system value
    select r.* from gone g, lateral jsonb_populate_record(row(g.*)::taskq.live_jobs, jsonb_build_object(
      'run_at', v_now + random() * coalesce(p_smear_seconds, 0) * interval '1 second',
      'state', case when coalesce(p_smear_seconds, 0) = 0 then 'queued' else 'scheduled' end,
      'max_attempts', g.attempt + (g.max_attempts - g.attempt_floor), 'attempt_floor', g.attempt,
      'finished_at', null, 'outcome', null, 'result', null, 'lease_deadline', null, 'lease_ms', null,
      'worker_id', null, 'started_at', null, 'cancel_requested', false)) r
    returning state
  ) select n + count(*), v_ready + count(*) filter (where state = 'queued') into n, v_ready from back;
  perform taskq.audit(p_queue, 'queue.redrive_failed', p_actor,
    jsonb_build_object('failed', v_failed),
    jsonb_build_object('failed', v_failed - n, 'redriven', n, 'limit', p_limit,
                       'smear_seconds', coalesce(p_smear_seconds, 0)));
  if v_ready > 0 then perform pg_notify('taskq_jobs', p_queue); end if;
  return n;
end $$;
