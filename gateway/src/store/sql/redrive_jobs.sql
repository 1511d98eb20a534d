-- redrive_jobs(ids, smear_seconds, now): the rule that puts failed jobs back, shared by redrive_failed
-- (a queue's, oldest first) and retry_job (one): each of `ids` that is failed is ready again in
-- taskq.live_jobs, updated in place if the maintenance leader has not moved it to taskq.job_history yet
-- (taskq.move_finished_jobs), else moved back (a history row older than retention is not). run_at is
-- uniform over [now, now + smear) (0 = ready now). Its attempt budget is granted again: attempt keeps
-- counting (it fences settles from the job's earlier life) and max_attempts is raised by the attempts
-- already spent. Returns the jobs put back and their new state. The callers lock, check and audit; it is
-- the owner's, run by their SECURITY DEFINER bodies (grants.sql keeps it from PUBLIC).
create or replace function taskq.redrive_jobs(p_ids bigint[], p_smear_seconds integer, p_now timestamptz)
returns table (id bigint, state text) language sql as $$
  with in_place as (
    update taskq.live_jobs j set
      run_at = p_now + random() * coalesce(p_smear_seconds, 0) * interval '1 second',
      state = case when coalesce(p_smear_seconds, 0) = 0 then 'queued' else 'scheduled' end,
      max_attempts = j.attempt + (j.max_attempts - j.attempt_floor),
      attempt_floor = j.attempt,
      finished_at = null, outcome = null, result = null, lease_deadline = null, lease_ms = null,
      worker_id = null, started_at = null, cancel_requested = false
    where j.id = any(p_ids) and j.state = 'failed'
    returning j.id, j.state
  ), gone as (
    delete from taskq.job_history h
    where h.id = any(p_ids) and h.state = 'failed' and h.finished_at >= taskq.retained_since()
    returning h.*
  ), back as (
    insert into taskq.live_jobs overriding system value
    select r.* from gone g, lateral jsonb_populate_record(row(g.*)::taskq.live_jobs, jsonb_build_object(
      'run_at', p_now + random() * coalesce(p_smear_seconds, 0) * interval '1 second',
      'state', case when coalesce(p_smear_seconds, 0) = 0 then 'queued' else 'scheduled' end,
      'max_attempts', g.attempt + (g.max_attempts - g.attempt_floor), 'attempt_floor', g.attempt,
      'finished_at', null, 'outcome', null, 'result', null, 'lease_deadline', null, 'lease_ms', null,
      'worker_id', null, 'started_at', null, 'cancel_requested', false)) r
    returning live_jobs.id, live_jobs.state
  )
  select i.id, i.state from in_place i union all select b.id, b.state from back b;
$$;
