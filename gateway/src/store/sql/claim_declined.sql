-- claim_declined(queue, verdict, retry_ms, poll): the row of taskq.jobs_claim that declines a queue,
-- with no job: its verdict, the retry to answer (null: the gateway's own for that verdict), and the
-- poll it declines (null: every poll of the claim).
create or replace function taskq.claim_declined(p_queue text, p_verdict text, p_retry_ms integer,
                                                p_poll integer default null)
returns table (poll integer, id text, queue text, attempt integer, max_attempts integer,
               lease_deadline_ms float8, payload bytea, content_type text, priority smallint, flow_key text,
               enqueued_at_ms float8, headers jsonb, verdict text, retry_ms integer)
language sql immutable as $$
  select p_poll, null::text, p_queue, null::integer, null::integer, null::float8, null::bytea, null::text,
         null::smallint, null::text, null::float8, null::jsonb, p_verdict, p_retry_ms
$$;
