-- enqueue_jobs(batch, queues, payloads, content_types, options): the one validation step of taskq.enqueue
-- and taskq.enqueue_batch, then the RPC's own enqueue (taskq.jobs_enqueue, notifying), so idempotency,
-- known queues and the wake-up of parked polls are the same code path as the gateway's. Job i is queue
-- i, payload i (bytes; null is refused), the content type its payload implies (options.content_type
-- overrides it) and its options (a JSON object; null is none). Returns each job's index in the input
-- (0-based), its id, and whether an idempotency key matched a job already there (whose id it is).
--
-- The checks and their wording are the RPC's (rpc/producer.ts, rpc/validate.ts), each raising
-- invalid_parameter_value (taskq.invalid) naming the field before anything is written: batch names a
-- field jobs[i].priority, as EnqueueBatch does; otherwise queue, payload and options.priority. The two
-- limits the RPC takes from the gateway's config are settings of the database here, with the
-- gateway's defaults: taskq.max_payload_bytes (1 MiB) and taskq.default_max_attempts (25).
--
-- One generic plan per connection for its statements: left to choose, Postgres planned the last one
-- (which reads the view taskq.jobs, over every partition of the history) again at every call, four
-- fifths of the cost of a one-job taskq.enqueue (540 -> 140 us a call in a loop of 2,000).
--
-- In the caller's transaction: the jobs, their queues' rows and the NOTIFY all wait for its commit,
-- and a rollback leaves none of them. An idempotency key is locked until then (as the RPC's is for its
-- own statement), so a second transaction enqueueing the same key waits for the first, then finds its
-- job (or, after a rollback, inserts its own).
create or replace function taskq.enqueue_jobs(p_batch boolean, p_queues text[], p_payloads bytea[],
                                              p_content_types text[], p_options jsonb[])
returns table (ord integer, id bigint, duplicate boolean)
language plpgsql volatile set search_path = pg_catalog, taskq, pg_temp set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  known text[] := array['content_type', 'delay_ms', 'flow_key', 'headers', 'idempotency_key', 'max_attempts',
                        'priority', 'run_at', 'ttl_seconds'];
  n integer := cardinality(p_queues);
  setting text;
  max_payload bigint;
  default_attempts bigint;
  at text;
  first_bad integer;
  first_fault text[];
  i integer;
  opt text;
  o jsonb;
  v jsonb;
  h record;
  run_at timestamptz;
  delay bigint;
  content_types text[];
  priorities integer[];
  flow_keys text[];
  run_ats timestamptz[];
  delays bigint[];
  ttls integer[];
  max_attempts integer[];
  keys text[];
  headers jsonb[];
  ins_ids bigint[];
  ins_queues text[];
  ins_keys text[];
begin
  -- Unset, the gateway's defaults; within the ranges of its settings maxPayloadBytes, defaultMaxAttempts.
  setting := coalesce(nullif(current_setting('taskq.max_payload_bytes', true), ''), '1048576');
  max_payload := taskq.option_int('setting taskq.max_payload_bytes',
    case when setting ~ '^[0-9]{1,18}$' then to_jsonb(setting::numeric) else to_jsonb(setting) end,
    1, 64 * 1024 * 1024);
  setting := coalesce(nullif(current_setting('taskq.default_max_attempts', true), ''), '25');
  default_attempts := taskq.option_int('setting taskq.default_max_attempts',
    case when setting ~ '^[0-9]{1,18}$' then to_jsonb(setting::numeric) else to_jsonb(setting) end,
    1, 1000);
  -- Every job's defaults, for the options it leaves out. (Filled to n first: an element assigned into a
  -- null array would start that array at its own index, and unnest would shift it.)
  content_types := p_content_types;
  priorities := array_fill(0, array[n]);
  flow_keys := array_fill(null::text, array[n]);
  keys := array_fill(null::text, array[n]);
  run_ats := array_fill(null::timestamptz, array[n]);
  delays := array_fill(null::bigint, array[n]);
  ttls := array_fill(0, array[n]);
  max_attempts := array_fill(default_attempts::integer, array[n]);
  headers := array_fill('{}'::jsonb, array[n]);
  -- The first job whose queue or payload is at fault, found by one statement (checked job by job in
  -- plpgsql, these cost a job of a batch more than its enqueue by the RPC); only the jobs that give
  -- options go through the loop, those before it, so the first fault in input order is the one named.
  select f.o::integer, f.fault into first_bad, first_fault
  from (
    select u.o, case
      -- As taskq.check_queue_name, naming the field.
      when u.queue is null or not taskq.is_name(u.queue) then
        array['queue', 'must be 1 to 128 letters or digits or . _ - and start with a letter or digit']
      when u.payload is null then array['payload', 'must not be null']
      when octet_length(u.payload) > max_payload then
        array['payload', format('must be at most %s bytes (got %s)', max_payload, octet_length(u.payload))]
    end as fault
    from unnest(p_queues, p_payloads) with ordinality as u(queue, payload, o)
  ) f
  where f.fault is not null
  order by f.o limit 1;
  -- A loop of plain plpgsql (no statement to start when no job gives options).
  i := 0;
  foreach o in array p_options loop
    i := i + 1;
    exit when i >= coalesce(first_bad, n + 1);
    continue when o is null or o = '{}'::jsonb;
    at := case when p_batch then 'jobs[' || (i - 1) || '].' else '' end;
    opt := case when p_batch then at else 'options.' end;
    if jsonb_typeof(o) <> 'object' then
      perform taskq.invalid(rtrim(opt, '.'), format('must be a JSON object (got a JSON %s)', jsonb_typeof(o)));
    end if;
    if o - known <> '{}'::jsonb then
      perform taskq.invalid(opt || (select min(k) from jsonb_object_keys(o - known) k),
        case when p_batch
          then 'is not a job field (they are queue, payload, payload_base64, ' || array_to_string(known, ', ') || ')'
          else 'is not an option (they are ' || array_to_string(known, ', ') || ')' end);
    end if;

    -- Each option checked only when given.
    if o ? 'content_type' then
      content_types[i] := coalesce(taskq.option_text(opt || 'content_type', o -> 'content_type', 255),
                                   p_content_types[i]);
    end if;
    if o ? 'priority' then
      priorities[i] := coalesce(taskq.option_int(opt || 'priority', o -> 'priority', -32768, 32767), 0);
    end if;
    if o ? 'flow_key' then
      flow_keys[i] := nullif(taskq.option_text(opt || 'flow_key', o -> 'flow_key', 255), '');
    end if;
    if o ? 'idempotency_key' then
      keys[i] := nullif(taskq.option_text(opt || 'idempotency_key', o -> 'idempotency_key', 255), '');
    end if;
    if o ? 'ttl_seconds' then
      ttls[i] := coalesce(taskq.option_int(opt || 'ttl_seconds', o -> 'ttl_seconds', 0, 10 * 365 * 86400), 0);
    end if;
    -- 0 takes the default, as JobSpec's max_attempts does.
    if o ? 'max_attempts' and o -> 'max_attempts' <> '0'::jsonb then
      max_attempts[i] := coalesce(taskq.option_int(opt || 'max_attempts', o -> 'max_attempts', 1, 1000),
                                  default_attempts);
    end if;

    delay := case when o ? 'delay_ms'
      then taskq.option_int(opt || 'delay_ms', o -> 'delay_ms', 0, 10::bigint * 365 * 86400000) end;
    run_at := null;
    v := o -> 'run_at';
    if v is not null and v <> 'null'::jsonb then
      if delay is not null then
        perform taskq.invalid(opt || 'run_at', 'must not be given with delay_ms (give one or neither)');
      end if;
      -- ISO 8601 with a zone (the instant must not depend on the session's TimeZone), e.g. what
      -- JSON.stringify makes of a Date.
      if jsonb_typeof(v) <> 'string' or (v #>> '{}') !~
          '^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}(:?\d{2})?)$' then
        perform taskq.invalid(opt || 'run_at',
          'must be an ISO 8601 time with a zone, e.g. "2030-01-02T03:04:05Z"');
      end if;
      begin
        run_at := (v #>> '{}')::timestamptz;
      exception when others then
        perform taskq.invalid(opt || 'run_at', format('must be a valid time (got %s)', v #>> '{}'));
      end;
      if extract(year from run_at at time zone 'UTC') not between 1970 and 9999 then
        perform taskq.invalid(opt || 'run_at', 'must be a time between 1970 and 9999');
      end if;
    end if;
    run_ats[i] := run_at;
    delays[i] := delay;

    v := o -> 'headers';
    if v is null or v = 'null'::jsonb then
      headers[i] := '{}'::jsonb;
    else
      if jsonb_typeof(v) <> 'object' then
        perform taskq.invalid(opt || 'headers',
          format('must be a JSON object of strings (got a JSON %s)', jsonb_typeof(v)));
      end if;
      if (select count(*) from jsonb_object_keys(v)) > 64 then
        perform taskq.invalid(opt || 'headers',
          format('must have 0 to 64 entries (got %s)', (select count(*) from jsonb_object_keys(v))));
      end if;
      for h in select e.key, e.value from jsonb_each(v) e loop
        if jsonb_typeof(h.value) <> 'string' then
          perform taskq.invalid(format('%sheaders[%s]', opt, left(h.key, 64)),
            format('must be a string (got a JSON %s)', jsonb_typeof(h.value)));
        end if;
        if octet_length(h.key) + octet_length(h.value #>> '{}') > 8192 then
          perform taskq.invalid(format('%sheaders[%s]', opt, left(h.key, 64)),
            format('must be at most 8192 bytes (got %s)', octet_length(h.key) + octet_length(h.value #>> '{}')));
        end if;
      end loop;
      headers[i] := v;
    end if;
  end loop;

  if first_bad is not null then
    perform taskq.invalid(case when p_batch then 'jobs[' || (first_bad - 1) || '].' else '' end || first_fault[1],
                          first_fault[2]);
  end if;

  -- The clock of the statement that enqueues (a delay counts from the call, not from the start of a
  -- long transaction); the job is claimable from its commit on.
  select array_agg(e.id::bigint), array_agg(e.queue), array_agg(e.idempotency_key)
  into ins_ids, ins_queues, ins_keys
  from taskq.jobs_enqueue(p_queues, p_payloads, content_types, priorities, flow_keys, run_ats, delays, ttls,
                          max_attempts, keys, headers, statement_timestamp(), true) e;

  -- As Store.matchInserted: jobs without a key get the unkeyed ids in input order (ids grow in
  -- insertion order, which follows input order); a key inserted is its first job's, and a key not
  -- inserted (or its second use in the batch) is a duplicate of the job that holds it. A statement of
  -- its own, after jobs_enqueue's: its snapshot sees the job of a transaction whose key lock we waited on.
  -- Without keys, every job was inserted, in input order.
  if cardinality(array_remove(keys, null)) = 0 then
    return query select (u.o - 1)::integer, u.id, false from unnest(ins_ids) with ordinality as u(id, o);
    return;
  end if;
  return query
  with inserted as (
    select u.id, u.queue, u.key, row_number() over (partition by u.key is null order by u.id) as nth
    from unnest(ins_ids, ins_queues, ins_keys) as u(id, queue, key)
  ), input as (
    select (t.ord - 1)::integer as ord, t.queue, t.key,
      row_number() over (partition by t.key is null order by t.ord) as nth,
      row_number() over (partition by t.queue, t.key order by t.ord) as nth_of_key
    from unnest(p_queues, keys) with ordinality as t(queue, key, ord)
  )
  select i.ord,
    coalesce(u.id, k.id, (select j.id from taskq.jobs j where j.queue = i.queue and j.idempotency_key = i.key
                          order by j.id desc limit 1)),
    i.key is not null and (k.id is null or i.nth_of_key > 1)
  from input i
  left join inserted u on i.key is null and u.key is null and u.nth = i.nth
  left join inserted k on k.queue = i.queue and k.key = i.key
  order by i.ord;
end $$;
