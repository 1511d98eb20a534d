-- enqueue_batch(jobs): enqueues up to 1000 jobs in the caller's transaction, all or none, as
-- EnqueueBatch does. jobs is a JSON array of objects, each a job: queue (required), payload (any JSON
-- value, stored as its text with content type application/json) or payload_base64 (bytes, standard
-- base64 with padding, content type ''), neither for an empty payload, and the options of
-- taskq.enqueue beside them. One row a job, in input order: ord, its index in jobs (0-based, as
-- jobs->ord and the errors, jobs[3].priority, count), its id, and duplicate, true when its
-- idempotency_key matched a job already there (or an earlier job of the batch), whose id it is.
create or replace function taskq.enqueue_batch(p_jobs jsonb)
returns table (ord integer, id bigint, duplicate boolean)
language plpgsql volatile security definer set search_path = pg_catalog, taskq, pg_temp as $$
declare
  n integer;
  first_fault jsonb;
  queues text[];
  payloads bytea[];
  content_types text[];
  options jsonb[];
begin
  if p_jobs is null or jsonb_typeof(p_jobs) <> 'array' then
    perform taskq.invalid('jobs', format('must be a JSON array (got %s)', coalesce('a JSON ' || jsonb_typeof(p_jobs), 'null')));
  end if;
  n := jsonb_array_length(p_jobs);
  if n < 1 or n > 1000 then
    perform taskq.invalid('jobs', format('must have 1 to 1000 entries (got %s)', n));
  end if;
  -- Two statements read the jobs (as a loop of plpgsql statements, a job cost twice as much): the
  -- first finds the first job at fault, with the field it names; the second, only once there is none,
  -- makes what enqueue_jobs takes. (In one statement, every use of a job's fault evaluated its checks again.)
  --  * A queue that is not a string is no name (5 must not become queue "5"): null, which
  --    enqueue_jobs refuses, naming the field.
  --  * payload_base64 is standard base64, padded; decode() alone would take "YQ=a" or "YQ==YQ==".
  --    Whitespace is skipped, as decode() skips it (encode() breaks its lines every 76), once the
  --    string as it is failed the check.
  select f.fault into first_fault
  from (
    select t.o, case
      when jsonb_typeof(t.e) <> 'object' then
        jsonb_build_array(format('jobs[%s]', t.o - 1), format('must be a JSON object (got a JSON %s)', jsonb_typeof(t.e)))
      when jsonb_typeof(t.e -> 'payload_base64') is null or jsonb_typeof(t.e -> 'payload_base64') = 'null' then null
      when t.e ? 'payload' then
        jsonb_build_array(format('jobs[%s].payload_base64', t.o - 1), 'must not be given with payload (give one or neither)')
      when jsonb_typeof(t.e -> 'payload_base64') = 'string' and (
          (length(t.e ->> 'payload_base64') % 4 = 0 and (t.e ->> 'payload_base64') ~ '^[A-Za-z0-9+/]*={0,2}$')
          or (length(translate(t.e ->> 'payload_base64', E' \t\r\n', '')) % 4 = 0
              and translate(t.e ->> 'payload_base64', E' \t\r\n', '') ~ '^[A-Za-z0-9+/]*={0,2}$')) then null
      else jsonb_build_array(format('jobs[%s].payload_base64', t.o - 1), 'must be a string of standard base64, padded with =')
    end as fault
    from jsonb_array_elements(p_jobs) with ordinality as t(e, o)
  ) f
  where f.fault is not null
  order by f.o limit 1;
  if first_fault is not null then
    perform taskq.invalid(first_fault ->> 0, first_fault ->> 1);
  end if;
  -- In input order, as jsonb_array_elements gives the jobs: one sort an array would cost a third more.
  select array_agg(case when jsonb_typeof(t.e -> 'queue') = 'string' then t.e ->> 'queue' end),
    array_agg(case when jsonb_typeof(t.e -> 'payload_base64') = 'string' then decode(t.e ->> 'payload_base64', 'base64')
                   when t.e ? 'payload' then convert_to((t.e -> 'payload')::text, 'UTF8')
                   else ''::bytea end),
    array_agg(case when jsonb_typeof(t.e -> 'payload_base64') = 'string' or not t.e ? 'payload' then ''
                   else 'application/json' end),
    array_agg(t.e - array['queue', 'payload', 'payload_base64'])
  into queues, payloads, content_types, options
  from jsonb_array_elements(p_jobs) as t(e);
  return query select * from taskq.enqueue_jobs(true, queues, payloads, content_types, options);
end $$;
