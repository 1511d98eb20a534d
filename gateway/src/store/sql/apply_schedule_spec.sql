-- Applies the spec keys given to s (validated); keys not given keep their value. The gateway also
-- parses the cron and time zone fully before calling; here the shape is checked so psql can't store
-- nonsense.
create or replace function taskq.apply_schedule_spec(s taskq.schedules, p_spec jsonb) returns taskq.schedules
language plpgsql as $$
declare
  k text;
  allowed text[] := array['cron', 'time_zone', 'queue', 'content_type', 'priority', 'flow_key', 'headers',
                          'max_attempts', 'ttl_seconds', 'missed_policy', 'smear_seconds'];
  p jsonb := coalesce(p_spec, '{}');
  fields integer;
begin
  if jsonb_typeof(p) <> 'object' then perform taskq.invalid('spec', 'must be a JSON object'); end if;
  for k in select jsonb_object_keys(p) loop
    if not k = any(allowed) then
      perform taskq.invalid('spec.' || k, 'is not a schedule setting (one of ' || array_to_string(allowed, ' ') || ')');
    end if;
  end loop;
  if p ? 'cron' then
    s.cron := btrim(coalesce(p ->> 'cron', ''));
    fields := coalesce(array_length(regexp_split_to_array(s.cron, '\s+'), 1), 0);
    if s.cron = '' or fields not in (5, 6) or s.cron !~ '^[0-9A-Za-z*/,?#\s-]+$' then
      perform taskq.invalid('cron', 'must have 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first');
    end if;
  end if;
  if p ? 'time_zone' then
    s.time_zone := coalesce(nullif(p ->> 'time_zone', ''), 'UTC');
    begin
      perform now() at time zone s.time_zone;
    exception when others then
      perform taskq.invalid('time_zone', 'must be UTC or an IANA time zone name such as Europe/Berlin');
    end;
  end if;
  if p ? 'queue' then s.queue := taskq.check_queue_name(p ->> 'queue'); end if;
  if p ? 'content_type' then
    s.content_type := coalesce(p ->> 'content_type', '');
    if octet_length(s.content_type) > 255 then perform taskq.invalid('content_type', 'must be at most 255 bytes'); end if;
  end if;
  if p ? 'priority' then
    s.priority := taskq.check_int('priority', coalesce((p ->> 'priority')::numeric, 0)::bigint, -32768, 32767);
  end if;
  if p ? 'flow_key' then
    s.flow_key := nullif(p ->> 'flow_key', '');
    if octet_length(s.flow_key) > 255 then perform taskq.invalid('flow_key', 'must be at most 255 bytes'); end if;
  end if;
  if p ? 'headers' then
    s.headers := coalesce(nullif(p -> 'headers', 'null'::jsonb), '{}');
    if jsonb_typeof(s.headers) <> 'object'
       or exists (select 1 from jsonb_each(s.headers) h where jsonb_typeof(h.value) <> 'string') then
      perform taskq.invalid('headers', 'must be an object of strings');
    end if;
  end if;
  if p ? 'max_attempts' then
    s.max_attempts := taskq.check_int('max_attempts', (p ->> 'max_attempts')::numeric::bigint, 1, 1000);
  end if;
  if p ? 'ttl_seconds' then
    s.ttl_seconds := taskq.check_int('ttl_seconds', (p ->> 'ttl_seconds')::numeric::bigint, 1, 315360000);
  end if;
  if p ? 'missed_policy' then
    s.missed_policy := coalesce(p ->> 'missed_policy', 'skip');
    if s.missed_policy not in ('skip', 'fire_once') then
      perform taskq.invalid('missed_policy', 'must be skip or fire_once');
    end if;
  end if;
  if p ? 'smear_seconds' then
    s.smear_seconds := coalesce(taskq.check_int('smear_seconds', (p ->> 'smear_seconds')::numeric::bigint, 0, 86400), 0);
  end if;
  if s.cron is null then perform taskq.invalid('cron', 'is required'); end if;
  if s.queue is null then perform taskq.invalid('queue', 'is required'); end if;
  return s;
end $$;
