-- retry_job(job_id, actor): one failed job ready again now, as redrive_failed puts a queue's back (the
-- rule is taskq.redrive_jobs: its attempt budget granted again). For the console's job page and
-- `taskq job retry`. A job that is not failed is refused (55000) saying its state; one never enqueued,
-- or finished before retention, is not found (P0002). Audited on the job's queue as job.retry; returns
-- the job's queue.
create or replace function taskq.retry_job(p_job_id bigint, p_actor text)
returns text language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  v_queue text;
  v_state text;
  v_attempt integer;
begin
  perform taskq.check_actor(p_actor);
  if p_job_id is null then perform taskq.invalid('job_id', 'is required'); end if;
  if p_job_id < 1 then perform taskq.invalid('job_id', 'must be a positive job id'); end if;
  -- Locked where it is, so a settle or the leader's move waits for the retry (and vice versa).
  select l.queue, l.state, l.attempt into v_queue, v_state, v_attempt
  from taskq.live_jobs l where l.id = p_job_id for update;
  if not found then
    select h.queue, h.state, h.attempt into v_queue, v_state, v_attempt
    from taskq.job_history h where h.id = p_job_id and h.finished_at >= taskq.retained_since() for update;
  end if;
  if v_queue is null then
    raise exception using errcode = 'P0002', message = 'job ' || p_job_id || ' not found';
  end if;
  if v_state <> 'failed' then
    raise exception using errcode = '55000',
      message = 'job ' || p_job_id || ' is ' || v_state || ', not failed: only a failed job can be retried';
  end if;
  perform taskq.redrive_jobs(array[p_job_id], 0, now());
  perform taskq.audit(v_queue, 'job.retry', p_actor,
    jsonb_build_object('job_id', p_job_id::text, 'state', 'failed', 'attempt', v_attempt),
    jsonb_build_object('job_id', p_job_id::text, 'state', 'queued'));
  perform pg_notify('taskq_jobs', v_queue);
  return v_queue;
end $$;
