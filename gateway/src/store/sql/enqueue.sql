-- enqueue(queue, payload, options): enqueues one job in the caller's transaction and returns its id (the
-- id of the job already holding options.idempotency_key, when one does). For applications on the same
-- database: the job exists if and only if the caller's transaction commits, and polls parked on any
-- gateway wake at that commit. A jsonb payload is stored as its text, content type application/json (as
-- the SDK sends a JSON value); a bytea payload as it is, content type '' (as the SDK sends bytes).
-- options (jsonb, every key optional, JSON null as absent) takes what JobSpec takes: priority, run_at,
-- delay_ms, flow_key, ttl_seconds, max_attempts, idempotency_key, headers, content_type, with the RPC's
-- ranges (taskq.enqueue_jobs). The role taskq_producer may run it (grants.sql). In plpgsql, which keeps
-- its statement's plan for the connection: a `language sql` body is planned again at every call.
create or replace function taskq.enqueue(p_queue text, p_payload jsonb, p_options jsonb default '{}')
returns bigint language plpgsql volatile security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  return (select e.id from taskq.enqueue_jobs(false, array[p_queue], array[convert_to(p_payload::text, 'UTF8')],
                                              array['application/json'], array[p_options]) e);
end $$;

create or replace function taskq.enqueue(p_queue text, p_payload bytea, p_options jsonb default '{}')
returns bigint language plpgsql volatile security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  return (select e.id from taskq.enqueue_jobs(false, array[p_queue], array[p_payload], array[''], array[p_options]) e);
end $$;
