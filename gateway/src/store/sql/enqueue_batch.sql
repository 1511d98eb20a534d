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
  i integer;
  e jsonb;
  v jsonb;
  queues text[];
  payloads bytea[];
  content_types text[];
  options jsonb[];
  b64 text;
begin
  if p_jobs is null or jsonb_typeof(p_jobs) <> 'array' then
    perform taskq.invalid('jobs', format('must be a JSON array (got %s)', coalesce('a JSON ' || jsonb_typeof(p_jobs), 'null')));
  end if;
  n := jsonb_array_length(p_jobs);
  if n < 1 or n > 1000 then
    perform taskq.invalid('jobs', format('must have 1 to 1000 entries (got %s)', n));
  end if;
  -- Each job read once, in order; a field's name (jobs[3]) built only for its error.
  for e, i in select t.e, t.o::integer from jsonb_array_elements(p_jobs) with ordinality as t(e, o) loop
    if jsonb_typeof(e) <> 'object' then
      perform taskq.invalid(format('jobs[%s]', i - 1), format('must be a JSON object (got a JSON %s)', jsonb_typeof(e)));
    end if;
    -- Not a string is not a name: 5 must not become queue "5" (taskq.enqueue_jobs names the field).
    v := e -> 'queue';
    queues[i] := case when jsonb_typeof(v) = 'string' then v #>> '{}' end;
    v := e -> 'payload_base64';
    if v is not null and v <> 'null'::jsonb then
      if e ? 'payload' then
        perform taskq.invalid(format('jobs[%s].payload_base64', i - 1), 'must not be given with payload (give one or neither)');
      end if;
      b64 := case when jsonb_typeof(v) = 'string' then v #>> '{}' end;
      -- Whitespace between the characters is ignored, as Postgres's decode() does (its encode() breaks
      -- the line every 76), once the string as it is failed the check.
      if length(b64) % 4 <> 0 or b64 !~ '^[A-Za-z0-9+/]*={0,2}$' then
        b64 := translate(b64, E' \t\r\n', '');
      end if;
      if b64 is null or length(b64) % 4 <> 0 or b64 !~ '^[A-Za-z0-9+/]*={0,2}$' then
        perform taskq.invalid(format('jobs[%s].payload_base64', i - 1), 'must be a string of standard base64, padded with =');
      end if;
      payloads[i] := decode(b64, 'base64');
      content_types[i] := '';
    elsif e ? 'payload' then
      payloads[i] := convert_to((e -> 'payload')::text, 'UTF8');
      content_types[i] := 'application/json';
    else
      payloads[i] := ''::bytea;
      content_types[i] := '';
    end if;
    options[i] := e - array['queue', 'payload', 'payload_base64'];
  end loop;
  return query select * from taskq.enqueue_jobs(true, queues, payloads, content_types, options);
end $$;
