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
  -- One statement reads every job (as a loop of plpgsql statements, a job cost twice as much): what
  -- enqueue_jobs takes, and the first job's fault, if any, with the field it names.
  --  * A queue that is not a string is no name (5 must not become queue "5"): null, which
  --    enqueue_jobs refuses, naming the field.
  --  * payload_base64 is standard base64, padded; decode() alone would take "YQ=a" or "YQ==YQ==".
  --    Whitespace is skipped, as decode() skips it (encode() breaks its lines every 76), once the
  --    string as it is failed the check. Bytes are decoded only for a job without a fault.
  with job as (
    select (t.o - 1)::integer as i, t.e, jsonb_typeof(t.e -> 'payload_base64') as b64_type,
      t.e ->> 'payload_base64' as b64
    from jsonb_array_elements(p_jobs) with ordinality as t(e, o)
  ), checked as (
    select job.*, case
      when jsonb_typeof(e) <> 'object' then
        jsonb_build_array(format('jobs[%s]', i), format('must be a JSON object (got a JSON %s)', jsonb_typeof(e)))
      when b64_type is null or b64_type = 'null' then null
      when e ? 'payload' then
        jsonb_build_array(format('jobs[%s].payload_base64', i), 'must not be given with payload (give one or neither)')
      when b64_type = 'string' and (
          (length(b64) % 4 = 0 and b64 ~ '^[A-Za-z0-9+/]*={0,2}$')
          or (length(translate(b64, E' \t\r\n', '')) % 4 = 0
              and translate(b64, E' \t\r\n', '') ~ '^[A-Za-z0-9+/]*={0,2}$')) then null
      else jsonb_build_array(format('jobs[%s].payload_base64', i), 'must be a string of standard base64, padded with =')
    end as fault
    from job
  )
  -- In input order, as jsonb_array_elements gives the jobs: one sort an array would cost a third more.
  select array_agg(case when jsonb_typeof(e -> 'queue') = 'string' then e ->> 'queue' end),
    array_agg(case when fault is not null then null
                   when b64_type = 'string' then decode(b64, 'base64')
                   when e ? 'payload' then convert_to((e -> 'payload')::text, 'UTF8')
                   else ''::bytea end),
    array_agg(case when b64_type = 'string' or not e ? 'payload' then '' else 'application/json' end),
    array_agg(case when fault is null then e - array['queue', 'payload', 'payload_base64'] end),
    (array_agg(fault) filter (where fault is not null))[1]
  into queues, payloads, content_types, options, first_fault
  from checked;
  if first_fault is not null then
    perform taskq.invalid(first_fault ->> 0, first_fault ->> 1);
  end if;
  return query select * from taskq.enqueue_jobs(true, queues, payloads, content_types, options);
end $$;
