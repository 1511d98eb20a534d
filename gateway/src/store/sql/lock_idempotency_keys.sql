-- Serializes the enqueue of a job with an idempotency key and the move of a finished job with that key
-- from taskq.live_jobs to taskq.job_history. Without it, an enqueue whose insert waited on the move's
-- delete would go ahead once the move committed, its check of the history made before the move: two
-- jobs under one key. Taken in a statement of its own, before the statement that reads the history,
-- so that statement's snapshot sees a move that held the lock. In key order, so two callers never
-- deadlock. (Two-key advisory locks: a space apart from the single-key ones taskq takes elsewhere.)
create or replace function taskq.lock_idempotency_keys(p_queues text[], p_keys text[]) returns void
language sql volatile as $$
  select count(pg_advisory_xact_lock(7311, k.h)) from (
    select distinct hashtext(u.queue || chr(1) || u.key) as h
    from unnest(p_queues, p_keys) as u(queue, key) where u.key is not null order by 1
  ) k;
$$;
