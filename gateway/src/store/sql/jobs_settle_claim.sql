-- A poll that carries settlements: they are applied (taskq.jobs_settle) and then the poll claims
-- (taskq.jobs_claim), in one statement and one transaction. A worker's cycle then costs Postgres one
-- round trip and one commit instead of a settle's and a claim's each. All or nothing: a failed claim
-- undoes the settles too, and the worker sends them again (settles are idempotent). p_keep_finished
-- and p_gateway as for taskq.jobs_settle.
--
-- Rows with `settled_state` set are the settle's (as jobs_settle returns them, its state in
-- settled_state); the others are the claim's (as jobs_claim returns them).
create or replace function taskq.jobs_settle_claim(p_ids bigint[], p_attempts integer[], p_kinds text[],
                                                   p_results bytea[], p_errors jsonb[], p_delays integer[],
                                                   p_now timestamptz, p_durations integer[], p_keep_finished boolean,
                                                   p_claim_queues text[], p_limits integer[], p_lease_ms integer[],
                                                   p_workers text[], p_blocked text[], p_gateway text)
returns table (settled_state text, next_run_at_ms float8, poll integer, id text, queue text, attempt integer,
               max_attempts integer, lease_deadline_ms float8, payload bytea, content_type text,
               priority smallint, flow_key text, enqueued_at_ms float8, headers jsonb, verdict text,
               retry_ms integer)
language plpgsql volatile
set plan_cache_mode = force_generic_plan
as $$
begin
  return query
  select s.state, s.next_run_at_ms, null::integer, s.id, s.queue, s.attempt, null::integer, null::float8,
         null::bytea, null::text, null::smallint, null::text, null::float8, null::jsonb, null::text,
         null::integer
  from taskq.jobs_settle(p_ids, p_attempts, p_kinds, p_results, p_errors, p_delays, p_now, p_durations,
                          p_keep_finished, p_gateway) s;
  -- A later statement of the same transaction: a job settled back to ready may be claimed again.
  return query
  select null::text, null::float8, c.*
  from taskq.jobs_claim(p_claim_queues, p_limits, p_lease_ms, p_workers, p_now, p_blocked) c;
end;
$$;
