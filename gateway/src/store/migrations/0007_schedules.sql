-- taskq schema, version 7: cron schedules (with smear), redrive of failed jobs (with smear).
-- (Version 6 is reserved; migrations apply in file order, each once.)
--
-- A schedule enqueues a copy of its job template once per cron slot. The maintenance leader plans the
-- slots (cron parsing lives in the gateway) and calls taskq.fire_schedule for each due one; that
-- function claims the slot (unique (schedule_id, slot), and slot > last_slot) and inserts the job in
-- one transaction, so a slot fires at most once whatever the number of gateways and restarts.

create table taskq.schedules (
  id bigint generated always as identity primary key,
  name text not null unique,
  -- 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first.
  cron text not null,
  -- An IANA time zone name the cron is read in ('UTC' by default).
  time_zone text not null default 'UTC',
  -- The job template.
  queue text not null,
  payload bytea not null default '',
  content_type text not null default '',
  priority smallint not null default 0,
  flow_key text,
  headers jsonb not null default '{}',
  -- null: the gateway's default.
  max_attempts integer,
  -- null: the queue's default_ttl_seconds (if any).
  ttl_seconds integer,
  -- Slots missed while no gateway ran (older than the scheduler's grace): 'skip' drops them,
  -- 'fire_once' fires the latest of them once.
  missed_policy text not null default 'skip' check (missed_policy in ('skip', 'fire_once')),
  smear_seconds integer not null default 0,
  -- The schedule's firing offset in [0, smear): a hash of its name, so the same on every gateway and
  -- after every restart, and different between co-scheduled entries.
  smear_offset_ms bigint generated always as (
    case when smear_seconds > 0
      then ('x' || substr(md5(name), 1, 12))::bit(48)::bigint % (smear_seconds::bigint * 1000)
      else 0 end) stored,
  paused boolean not null default false,
  -- Every slot at or before this is done (fired, skipped, or before the schedule existed).
  last_slot timestamptz not null default now(),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- One row per fired slot: the unique key that makes a slot fire at most once.
create table taskq.schedule_fires (
  schedule_id bigint not null references taskq.schedules (id) on delete cascade,
  slot timestamptz not null,
  job_id bigint not null,
  fired_at timestamptz not null default now(),
  primary key (schedule_id, slot)
);
create index schedule_fires_fired_idx on taskq.schedule_fires (fired_at);

-- A redriven job's attempt keeps counting (it is the fencing token); attempt_floor remembers where its
-- current attempt budget started, so each redrive grants the job's budget again and never more.
alter table taskq.jobs add column attempt_floor integer not null default 0;
-- The redriver: failed jobs of a queue, oldest first.
create index jobs_failed_idx on taskq.jobs (queue, id) where state = 'failed';

-- The public view of a schedule (without the payload bytes), as the verbs return it and the audit
-- records it.
create function taskq.schedule_settings(s taskq.schedules) returns jsonb language sql immutable as $$
  select jsonb_build_object(
    'name', s.name, 'cron', s.cron, 'time_zone', s.time_zone, 'queue', s.queue,
    'payload_bytes', octet_length(s.payload), 'content_type', s.content_type, 'priority', s.priority,
    'flow_key', s.flow_key, 'headers', s.headers, 'max_attempts', s.max_attempts,
    'ttl_seconds', s.ttl_seconds, 'missed_policy', s.missed_policy, 'smear_seconds', s.smear_seconds,
    'smear_offset_ms', s.smear_offset_ms, 'paused', s.paused, 'last_slot', s.last_slot,
    'created_at', s.created_at, 'updated_at', s.updated_at)
$$;

create function taskq.schedule_audit(p_name text, p_event text, p_actor text, p_before jsonb, p_after jsonb)
returns void language sql as $$
  insert into taskq.queue_audit (queue, event_type, actor, detail)
  values ('schedule:' || p_name, p_event, p_actor, jsonb_build_object('before', p_before, 'after', p_after));
$$;

create function taskq.check_schedule_name(p_name text) returns text language plpgsql immutable as $$
begin
  if p_name is null or p_name !~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' then
    perform taskq.invalid('name', 'must be 1 to 128 letters or digits or . _ - and start with a letter or digit');
  end if;
  return p_name;
end $$;

-- Locks the named schedule's row; no_data_found when there is none.
create function taskq.lock_schedule(p_name text) returns taskq.schedules language plpgsql as $$
declare
  s taskq.schedules;
begin
  perform taskq.check_schedule_name(p_name);
  select * into s from taskq.schedules where name = p_name for update;
  if not found then
    raise exception using errcode = 'P0002', message = 'schedule ' || p_name || ' not found';
  end if;
  return s;
end $$;

-- Applies the spec keys given to s (validated); keys not given keep their value. The gateway also
-- parses the cron and time zone fully before calling; here the shape is checked so psql can't store
-- nonsense.
create function taskq.apply_schedule_spec(s taskq.schedules, p_spec jsonb) returns taskq.schedules
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

-- create_schedule(name, spec jsonb, payload, actor): spec keys cron (required), queue (required),
-- time_zone, content_type, priority, flow_key, headers, max_attempts, ttl_seconds, missed_policy,
-- smear_seconds. Slots before now never fire.
create function taskq.create_schedule(p_name text, p_spec jsonb, p_payload bytea, p_actor text) returns jsonb
language plpgsql as $$
declare
  s taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s.name := taskq.check_schedule_name(p_name);
  s.time_zone := 'UTC';
  s.content_type := '';
  s.priority := 0;
  s.headers := '{}';
  s.missed_policy := 'skip';
  s.smear_seconds := 0;
  s := taskq.apply_schedule_spec(s, p_spec);
  if exists (select 1 from taskq.schedules where name = p_name) then
    raise exception using errcode = '23505', message = 'schedule ' || p_name || ' already exists';
  end if;
  insert into taskq.schedules (name, cron, time_zone, queue, payload, content_type, priority, flow_key, headers,
                               max_attempts, ttl_seconds, missed_policy, smear_seconds)
  values (s.name, s.cron, s.time_zone, s.queue, coalesce(p_payload, ''), s.content_type, s.priority, s.flow_key,
          s.headers, s.max_attempts, s.ttl_seconds, s.missed_policy, s.smear_seconds)
  returning * into s;
  perform taskq.schedule_audit(p_name, 'schedule.create', p_actor, null, taskq.schedule_settings(s));
  return taskq.schedule_settings(s);
end $$;

-- update_schedule(name, spec jsonb, payload, actor): sets the spec keys given (a null payload keeps
-- the payload). A changed cron or time zone starts afresh: slots before now never fire.
create function taskq.update_schedule(p_name text, p_spec jsonb, p_payload bytea, p_actor text) returns jsonb
language plpgsql as $$
declare
  s taskq.schedules;
  n taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s := taskq.lock_schedule(p_name);
  n := taskq.apply_schedule_spec(s, p_spec);
  update taskq.schedules set cron = n.cron, time_zone = n.time_zone, queue = n.queue,
    payload = coalesce(p_payload, payload), content_type = n.content_type, priority = n.priority,
    flow_key = n.flow_key, headers = n.headers, max_attempts = n.max_attempts, ttl_seconds = n.ttl_seconds,
    missed_policy = n.missed_policy, smear_seconds = n.smear_seconds,
    last_slot = case when n.cron <> s.cron or n.time_zone <> s.time_zone then greatest(last_slot, now())
                else last_slot end,
    updated_at = now()
  where id = s.id returning * into n;
  perform taskq.schedule_audit(p_name, 'schedule.update', p_actor, taskq.schedule_settings(s), taskq.schedule_settings(n));
  return taskq.schedule_settings(n);
end $$;

create function taskq.delete_schedule(p_name text, p_actor text) returns jsonb language plpgsql as $$
declare
  s taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s := taskq.lock_schedule(p_name);
  delete from taskq.schedules where id = s.id;
  perform taskq.schedule_audit(p_name, 'schedule.delete', p_actor, taskq.schedule_settings(s), null);
  return taskq.schedule_settings(s);
end $$;

-- Slots that pass while a schedule is paused are skipped (resume does not catch up).
create function taskq.pause_schedule(p_name text, p_actor text) returns jsonb language plpgsql as $$
declare
  s taskq.schedules;
  n taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s := taskq.lock_schedule(p_name);
  update taskq.schedules set paused = true, updated_at = now() where id = s.id returning * into n;
  perform taskq.schedule_audit(p_name, 'schedule.pause', p_actor, taskq.schedule_settings(s), taskq.schedule_settings(n));
  return taskq.schedule_settings(n);
end $$;

create function taskq.resume_schedule(p_name text, p_actor text) returns jsonb language plpgsql as $$
declare
  s taskq.schedules;
  n taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  s := taskq.lock_schedule(p_name);
  update taskq.schedules set paused = false,
    last_slot = case when paused then greatest(last_slot, now()) else last_slot end, updated_at = now()
  where id = s.id returning * into n;
  perform taskq.schedule_audit(p_name, 'schedule.resume', p_actor, taskq.schedule_settings(s), taskq.schedule_settings(n));
  return taskq.schedule_settings(n);
end $$;

-- set_schedule_smear(name, smear_seconds, actor): 0 to 86,400; 0 (or null) fires on the slot.
create function taskq.set_schedule_smear(p_name text, p_smear_seconds integer, p_actor text) returns jsonb
language plpgsql as $$
declare
  s taskq.schedules;
  n taskq.schedules;
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_int('smear_seconds', p_smear_seconds, 0, 86400);
  s := taskq.lock_schedule(p_name);
  update taskq.schedules set smear_seconds = coalesce(p_smear_seconds, 0), updated_at = now()
  where id = s.id returning * into n;
  perform taskq.schedule_audit(p_name, 'schedule.set_smear', p_actor, taskq.schedule_settings(s), taskq.schedule_settings(n));
  return taskq.schedule_settings(n);
end $$;

-- Every schedule, by name (for operators and observers on psql).
create function taskq.list_schedules() returns table (name text, settings jsonb) language sql stable as $$
  select s.name, taskq.schedule_settings(s) from taskq.schedules s order by s.name
$$;

-- Fires one slot of a schedule: claims (schedule, slot) and enqueues the template with run_at =
-- p_run_at (slot + smear offset) in one transaction. Returns the job id, or null when the slot was
-- already fired or passed over (slot <= last_slot), or the schedule is paused or gone. Internal to
-- the gateway's scheduler: not granted to any operator role.
create function taskq.fire_schedule(p_schedule_id bigint, p_slot timestamptz, p_run_at timestamptz,
                                    p_default_max_attempts integer, p_now timestamptz)
returns text language plpgsql as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  s taskq.schedules;
  v_ttl integer;
  v_job bigint;
begin
  select * into s from taskq.schedules where id = p_schedule_id for update;
  if not found or s.paused or p_slot <= s.last_slot then return null; end if;
  insert into taskq.schedule_fires (schedule_id, slot, job_id) values (s.id, p_slot, 0)
  on conflict do nothing;
  if not found then return null; end if;
  select coalesce(s.ttl_seconds, q.default_ttl_seconds) into v_ttl from taskq.queues q where q.name = s.queue;
  v_ttl := coalesce(v_ttl, s.ttl_seconds);
  insert into taskq.jobs (queue, state, priority, flow_key, payload, content_type, headers, max_attempts, run_at,
                          enqueued_at, expires_at)
  values (s.queue, case when p_run_at > v_now then 'scheduled' else 'queued' end, s.priority, s.flow_key,
          s.payload, s.content_type,
          s.headers || jsonb_build_object('taskq-schedule', s.name, 'taskq-schedule-slot',
                                          to_char(p_slot at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
          coalesce(s.max_attempts, p_default_max_attempts), p_run_at, v_now,
          case when v_ttl > 0 then greatest(p_run_at, v_now) + v_ttl * interval '1 second' end)
  returning id into v_job;
  update taskq.schedule_fires set job_id = v_job where schedule_id = s.id and slot = p_slot;
  update taskq.schedules set last_slot = p_slot where id = s.id;
  if p_run_at <= v_now then perform pg_notify('taskq_jobs', s.queue); end if;
  return v_job::text;
end $$;

-- redrive_failed(queue, limit, actor, smear_seconds): moves up to `limit` (1 to 100,000) failed jobs
-- of the queue, oldest first, back to waiting with run_at uniform over [now, now + smear) (smear 0 to
-- 86,400; 0 = ready now). Each job gets its attempt budget again: attempt keeps counting (it fences
-- settles from the job's earlier life) and max_attempts is raised by the attempts already spent.
-- Returns how many; audited as queue.redrive_failed.
create function taskq.redrive_failed(p_queue text, p_limit integer, p_actor text, p_smear_seconds integer)
returns bigint language plpgsql as $$
declare
  v_now timestamptz := now();
  v_failed bigint;
  n bigint;
  v_ready bigint;
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_queue_name(p_queue);
  if p_limit is null then perform taskq.invalid('limit', 'is required'); end if;
  perform taskq.check_int('limit', p_limit, 1, 100000);
  perform taskq.check_int('smear_seconds', p_smear_seconds, 0, 86400);
  select count(*) into v_failed from taskq.jobs where queue = p_queue and state = 'failed';
  with picked as (
    select id from taskq.jobs where queue = p_queue and state = 'failed'
    order by id limit p_limit for update skip locked
  ), moved as (
    update taskq.jobs j set
      run_at = v_now + random() * coalesce(p_smear_seconds, 0) * interval '1 second',
      state = case when coalesce(p_smear_seconds, 0) = 0 then 'queued' else 'scheduled' end,
      max_attempts = j.attempt + (j.max_attempts - j.attempt_floor),
      attempt_floor = j.attempt,
      finished_at = null, outcome = null, result = null, lease_deadline = null, lease_ms = null,
      worker_id = null, started_at = null, cancel_requested = false
    from picked where j.id = picked.id
    returning j.state
  ) select count(*), count(*) filter (where state = 'queued') into n, v_ready from moved;
  perform taskq.audit(p_queue, 'queue.redrive_failed', p_actor,
    jsonb_build_object('failed', v_failed),
    jsonb_build_object('failed', v_failed - n, 'redriven', n, 'limit', p_limit,
                       'smear_seconds', coalesce(p_smear_seconds, 0)));
  if v_ready > 0 then perform pg_notify('taskq_jobs', p_queue); end if;
  return n;
end $$;

-- Grants, as in version 5: SECURITY DEFINER with a pinned search_path, EXECUTE revoked from PUBLIC,
-- granted to taskq_operator (and list_schedules to taskq_observer). fire_schedule is the gateway's
-- own and stays with the owner.
do $$
declare
  f record;
  verbs text[] := array['create_schedule', 'update_schedule', 'delete_schedule', 'pause_schedule',
    'resume_schedule', 'set_schedule_smear', 'redrive_failed'];
  reads text[] := array['list_schedules'];
  internal text[] := array['fire_schedule'];
begin
  for f in
    select p.oid::regprocedure as sig, p.proname::text as name from pg_proc p
    where p.pronamespace = 'taskq'::regnamespace and p.proname = any(verbs || reads || internal)
  loop
    execute format('alter function %s security definer set search_path = pg_catalog, taskq, pg_temp', f.sig);
    execute format('revoke execute on function %s from public', f.sig);
    if f.name = any(verbs || reads) and exists (select 1 from pg_roles where rolname = 'taskq_operator') then
      execute format('grant execute on function %s to taskq_operator', f.sig);
    end if;
    if f.name = any(reads) and exists (select 1 from pg_roles where rolname = 'taskq_observer') then
      execute format('grant execute on function %s to taskq_observer', f.sig);
    end if;
  end loop;
end $$;
