-- An enqueue that hands its jobs straight to polls parked on the gateway that runs it: the batch is
-- inserted (taskq.jobs_enqueue) and then claimed for those polls (taskq.jobs_claim, every gate it
-- decides under the queue's lock as for any claim), in one statement and one transaction. The parked
-- polls get their jobs with the enqueue's answer, instead of a notification, a wake-up and a claim
-- statement of their own later (one Postgres round trip and commit less between a job's enqueue and its
-- start).
--
-- Only the queues where a job of the batch is still ready after the claim are notified: a job handed out
-- here is news to no one, and notifying it woke every poll parked on the queue, on every gateway, for a
-- claim that found nothing (and told the handing gateway its polls' queues had changed when they had
-- not). A queue with notify_mode on_idle_transition is notified by the same rule, so at least whenever
-- jobs_enqueue alone would have.
--
-- Rows with `enqueued_id` set are the enqueue's (as jobs_enqueue returns them); the others are the
-- claim's (as jobs_claim returns them).
create or replace function taskq.jobs_enqueue_claim(p_queues text[], p_payloads bytea[], p_content_types text[],
                                                    p_priorities integer[], p_flow_keys text[], p_run_ats timestamptz[],
                                                    p_delays bigint[], p_ttls integer[], p_max_attempts integer[],
                                                    p_keys text[], p_headers jsonb[], p_now timestamptz,
                                                    p_claim_queues text[], p_limits integer[], p_lease_ms integer[],
                                                    p_workers text[], p_blocked text[])
returns table (enqueued_id text, enqueued_key text, poll integer, id text, queue text, attempt integer,
               max_attempts integer, lease_deadline_ms float8, payload bytea, content_type text,
               priority smallint, flow_key text, enqueued_at_ms float8, headers jsonb, verdict text,
               retry_ms integer)
language plpgsql volatile
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set jit = off
as $$
declare
  v_ids text[];
  v_keys text[];
  v_queues text[];
begin
  select coalesce(array_agg(e.id order by e.n), '{}'), coalesce(array_agg(e.idempotency_key order by e.n), '{}'),
         coalesce(array_agg(e.queue order by e.n), '{}')
  into v_ids, v_keys, v_queues
  from taskq.jobs_enqueue(p_queues, p_payloads, p_content_types, p_priorities, p_flow_keys, p_run_ats,
                          p_delays, p_ttls, p_max_attempts, p_keys, p_headers, p_now, false)
    with ordinality as e(id, queue, idempotency_key, notified, n);
  return query
  select e.id, e.idempotency_key, null::integer, null::text, e.queue, null::integer, null::integer,
         null::float8, null::bytea, null::text, null::smallint, null::text, null::float8, null::jsonb,
         null::text, null::integer
  from unnest(v_ids, v_keys, v_queues) as e(id, idempotency_key, queue);
  -- A later statement of the same transaction: it sees the rows just inserted.
  return query
  select null::text, null::text, c.*
  from taskq.jobs_claim(p_claim_queues, p_limits, p_lease_ms, p_workers, p_now, p_blocked) c;
  -- Each job of the batch looked up by primary key (`is true`: see taskq.jobs_settle).
  perform pg_notify('taskq_jobs', r.queue)
  from (select distinct j.queue from taskq.live_jobs j
        where j.id = any(v_ids::bigint[]) and (j.state = 'queued') is true) r;
end;
$$;
