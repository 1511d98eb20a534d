-- taskq schema, version 2: queue profiles, flow limits, the operator audit log, and the operator verbs
-- as SQL functions. Each verb validates, changes, appends its audit row and notifies every gateway in
-- one transaction: a verb that fails writes nothing.

create table taskq.queues (
  name text primary key,
  paused boolean not null default false,
  -- Every gate is off while its setting is null.
  max_running integer,
  throttle_limit integer,
  throttle_period_ms integer,
  -- 'config' (from the gateway's config file: the API refuses to change it) or 'console' (the API).
  throttle_source text check (throttle_source in ('config', 'console')),
  claim_rate_per_minute integer,
  claim_burst integer,
  ramp_seconds integer,
  ramp_started_at timestamptz,
  priority_aging_seconds integer,
  default_ttl_seconds integer,
  notify_mode text not null default 'always' check (notify_mode in ('always', 'on_idle_transition')),
  -- True when any claim-time gate applies: such queues are claimed one by one through claim_queue,
  -- and the plain batched claim skips them.
  gated boolean generated always as (paused or max_running is not null or throttle_limit is not null
    or claim_rate_per_minute is not null or priority_aging_seconds is not null) stored,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Key-level claim rates, across queues. Keys without a row are unlimited.
create table taskq.flow_limits (
  flow_key text primary key,
  rate_per_minute integer not null,
  burst integer not null,
  updated_at timestamptz not null default now()
);

-- Append-only operator audit. Flow-limit changes are recorded under "flow:<key>" (queue names cannot
-- contain ':').
create table taskq.queue_audit (
  id bigint generated always as identity primary key,
  queue text not null,
  event_type text not null,
  actor text not null,
  detail jsonb not null,
  created_at timestamptz not null default now()
);
create index queue_audit_queue_idx on taskq.queue_audit (queue, id desc);
create index queue_audit_created_idx on taskq.queue_audit (created_at);

-- max_running counts running jobs of one queue.
create index jobs_running_idx on taskq.jobs (queue) where state = 'running';

-- Raises invalid_parameter_value with a message that names the field.
create function taskq.invalid(field text, rule text) returns void language plpgsql as $$
begin
  raise exception using errcode = '22023', message = field || ' ' || rule;
end $$;

create function taskq.check_int(field text, v bigint, lo bigint, hi bigint) returns integer
language plpgsql immutable as $$
begin
  if v is not null and (v < lo or v > hi) then
    perform taskq.invalid(field, format('must be from %s to %s (got %s)', lo, hi, v));
  end if;
  return v;
end $$;

create function taskq.check_queue_name(name text) returns text language plpgsql immutable as $$
begin
  if name is null or name !~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' then
    perform taskq.invalid('queue', 'must be 1 to 128 letters or digits or . _ - and start with a letter or digit');
  end if;
  return name;
end $$;

create function taskq.check_actor(actor text) returns text language plpgsql immutable as $$
begin
  if actor is null or length(actor) = 0 or length(actor) > 255 then
    perform taskq.invalid('actor', 'must be 1 to 255 characters');
  end if;
  return actor;
end $$;

-- The public view of a queue's settings, as every verb returns it and the audit records it.
create function taskq.queue_settings(q taskq.queues) returns jsonb language sql immutable as $$
  select jsonb_build_object(
    'paused', q.paused,
    'max_running', q.max_running,
    'throttle', case when q.throttle_limit is null then null else jsonb_build_object(
      'limit', q.throttle_limit, 'period_ms', q.throttle_period_ms, 'source', q.throttle_source) end,
    'claim_rate_per_minute', q.claim_rate_per_minute,
    'claim_burst', q.claim_burst,
    'ramp_seconds', q.ramp_seconds,
    'ramp_started_at', q.ramp_started_at,
    'priority_aging_seconds', q.priority_aging_seconds,
    'default_ttl_seconds', q.default_ttl_seconds,
    'notify_mode', q.notify_mode)
$$;

create function taskq.audit(p_queue text, p_event text, p_actor text, p_before jsonb, p_after jsonb)
returns void language sql as $$
  insert into taskq.queue_audit (queue, event_type, actor, detail)
  values (p_queue, p_event, p_actor, jsonb_build_object('before', p_before, 'after', p_after));
  select pg_notify('taskq_queues', p_queue);
$$;

-- Locks the queue's row, creating it with every gate off when it does not exist yet.
create function taskq.lock_queue(p_name text) returns taskq.queues language plpgsql as $$
declare
  q taskq.queues;
begin
  perform taskq.check_queue_name(p_name);
  insert into taskq.queues (name) values (p_name) on conflict (name) do nothing;
  select * into q from taskq.queues where name = p_name for update;
  return q;
end $$;

-- Creates the queue if needed and sets the profile keys given (a null value turns that setting off);
-- keys not given keep their value. Audited as p_event. Returns the settings.
create function taskq.update_profile(p_name text, p_profile jsonb, p_actor text, p_event text) returns jsonb
language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
  k text;
  allowed text[] := array['max_running', 'claim_rate_per_minute', 'claim_burst', 'ramp_seconds',
                          'priority_aging_seconds', 'default_ttl_seconds', 'notify_mode'];
  p jsonb := coalesce(p_profile, '{}');
begin
  perform taskq.check_actor(p_actor);
  if jsonb_typeof(p) <> 'object' then perform taskq.invalid('profile', 'must be a JSON object'); end if;
  for k in select jsonb_object_keys(p) loop
    if k = 'throttle' then
      perform taskq.invalid('profile.throttle', 'is set with set_queue_throttle (REST PUT /api/v1/queues/:name/throttle)');
    elsif not k = any(allowed) then
      perform taskq.invalid('profile.' || k, 'is not a profile setting (one of ' || array_to_string(allowed, ' ') || ')');
    elsif jsonb_typeof(p -> k) not in ('number', 'null') and k <> 'notify_mode' then
      perform taskq.invalid('profile.' || k, 'must be a whole number or null');
    elsif jsonb_typeof(p -> k) = 'number' and (p ->> k)::numeric <> trunc((p ->> k)::numeric) then
      perform taskq.invalid('profile.' || k, 'must be a whole number or null');
    end if;
  end loop;
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  if p ? 'max_running' then
    q.max_running := taskq.check_int('profile.max_running', (p ->> 'max_running')::bigint, 1, 1000000);
  end if;
  if p ? 'claim_rate_per_minute' then
    q.claim_rate_per_minute := taskq.check_int('profile.claim_rate_per_minute', (p ->> 'claim_rate_per_minute')::bigint, 1, 6000000);
  end if;
  if p ? 'claim_burst' then
    q.claim_burst := taskq.check_int('profile.claim_burst', (p ->> 'claim_burst')::bigint, 1, 100000);
  end if;
  if p ? 'ramp_seconds' then
    q.ramp_seconds := taskq.check_int('profile.ramp_seconds', (p ->> 'ramp_seconds')::bigint, 1, 86400);
  end if;
  if p ? 'priority_aging_seconds' then
    q.priority_aging_seconds := taskq.check_int('profile.priority_aging_seconds', (p ->> 'priority_aging_seconds')::bigint, 1, 31536000);
  end if;
  if p ? 'default_ttl_seconds' then
    q.default_ttl_seconds := taskq.check_int('profile.default_ttl_seconds', (p ->> 'default_ttl_seconds')::bigint, 1, 315360000);
  end if;
  if p ? 'notify_mode' then
    if coalesce(p ->> 'notify_mode', 'always') not in ('always', 'on_idle_transition') then
      perform taskq.invalid('profile.notify_mode', 'must be always or on_idle_transition');
    end if;
    q.notify_mode := coalesce(p ->> 'notify_mode', 'always');
  end if;
  if q.claim_burst is not null and q.claim_rate_per_minute is null then
    perform taskq.invalid('profile.claim_burst', 'needs claim_rate_per_minute');
  end if;
  update taskq.queues set max_running = q.max_running, claim_rate_per_minute = q.claim_rate_per_minute,
    claim_burst = q.claim_burst, ramp_seconds = q.ramp_seconds, priority_aging_seconds = q.priority_aging_seconds,
    default_ttl_seconds = q.default_ttl_seconds, notify_mode = q.notify_mode, updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, p_event, p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- ensure_queue(name, profile jsonb, actor): the queue profile verb.
create function taskq.ensure_queue(p_name text, p_profile jsonb, p_actor text) returns jsonb
language sql as $$
  select taskq.update_profile(p_name, p_profile, p_actor, 'queue.ensure')
$$;

create function taskq.pause_queue(p_name text, p_actor text) returns jsonb language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  update taskq.queues set paused = true, updated_at = now() where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.pause', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- Resuming starts the slow-start ramp when the queue has one.
create function taskq.resume_queue(p_name text, p_actor text) returns jsonb language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  update taskq.queues set paused = false,
    ramp_started_at = case when ramp_seconds is not null and paused then now() else ramp_started_at end,
    updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.resume', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- Deletes every waiting (queued or scheduled) job of the queue, never a running one; returns the count.
create function taskq.clear_queue(p_name text, p_actor text) returns bigint language plpgsql as $$
declare
  q taskq.queues;
  n bigint;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  with gone as (
    delete from taskq.jobs where queue = p_name and state in ('queued', 'scheduled') returning 1
  ) select count(*) into n from gone;
  perform taskq.audit(p_name, 'queue.clear', p_actor, jsonb_build_object('waiting', n), jsonb_build_object('waiting', 0));
  return n;
end $$;

-- The REST "concurrency" route: the fleet-wide max_running; null removes the cap.
create function taskq.set_queue_concurrency(p_name text, p_max_running integer, p_actor text) returns jsonb
language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_int('max_running', p_max_running, 1, 1000000);
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  update taskq.queues set max_running = p_max_running, updated_at = now() where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.concurrency', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- Sets the throttle {limit, period_ms}. A config-sourced throttle can only be changed by the config
-- (p_source = 'config', used by the gateway at start-up); the API gets 'object_not_in_prerequisite_state'.
create function taskq.set_queue_throttle(p_name text, p_limit integer, p_period_ms integer, p_actor text,
                                         p_source text default 'console') returns jsonb
language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  if p_limit is null then perform taskq.invalid('limit', 'is required'); end if;
  if p_period_ms is null then perform taskq.invalid('period_ms', 'is required'); end if;
  perform taskq.check_int('limit', p_limit, 1, 100000);
  perform taskq.check_int('period_ms', p_period_ms, 1000, 86400000);
  if p_source not in ('config', 'console') then perform taskq.invalid('source', 'must be config or console'); end if;
  q := taskq.lock_queue(p_name);
  if q.throttle_source = 'config' and p_source <> 'config' then
    raise exception using errcode = '55000',
      message = 'queue ' || p_name || ' has a throttle from the gateway config - change it there';
  end if;
  before := taskq.queue_settings(q);
  update taskq.queues set throttle_limit = p_limit, throttle_period_ms = p_period_ms, throttle_source = p_source,
    updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.throttle', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

create function taskq.delete_queue_throttle(p_name text, p_actor text, p_source text default 'console')
returns jsonb language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  if q.throttle_source = 'config' and p_source <> 'config' then
    raise exception using errcode = '55000',
      message = 'queue ' || p_name || ' has a throttle from the gateway config - change it there';
  end if;
  before := taskq.queue_settings(q);
  update taskq.queues set throttle_limit = null, throttle_period_ms = null, throttle_source = null, updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.unthrottle', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- set_flow_limit(key, rate_per_minute, burst, actor): meters claims of jobs carrying that flow key
-- across all queues. A null rate removes the limit (the key becomes unlimited again).
create function taskq.set_flow_limit(p_key text, p_rate_per_minute integer, p_burst integer, p_actor text)
returns jsonb language plpgsql as $$
declare
  before jsonb;
  after jsonb;
begin
  perform taskq.check_actor(p_actor);
  if p_key is null or length(p_key) = 0 or octet_length(p_key) > 255 then
    perform taskq.invalid('flow_key', 'must be 1 to 255 bytes');
  end if;
  perform taskq.check_int('rate_per_minute', p_rate_per_minute, 1, 6000000);
  perform taskq.check_int('burst', p_burst, 1, 100000);
  select jsonb_build_object('rate_per_minute', rate_per_minute, 'burst', burst) into before
  from taskq.flow_limits where flow_key = p_key for update;
  if p_rate_per_minute is null then
    delete from taskq.flow_limits where flow_key = p_key;
  else
    insert into taskq.flow_limits (flow_key, rate_per_minute, burst) values (p_key, p_rate_per_minute, coalesce(p_burst, 1))
    on conflict (flow_key) do update set rate_per_minute = excluded.rate_per_minute, burst = excluded.burst,
      updated_at = now();
    after := jsonb_build_object('rate_per_minute', p_rate_per_minute, 'burst', coalesce(p_burst, 1));
  end if;
  insert into taskq.queue_audit (queue, event_type, actor, detail)
  values ('flow:' || p_key, 'flow.set_limit', p_actor, jsonb_build_object('before', before, 'after', after));
  perform pg_notify('taskq_flow_limits', p_key);
  return after;
end $$;

-- set_priority_aging(queue, seconds, actor): +1 effective priority per `seconds` waited; null = strict.
create function taskq.set_priority_aging(p_name text, p_seconds integer, p_actor text) returns jsonb
language plpgsql as $$
begin
  perform taskq.check_int('aging_seconds', p_seconds, 1, 31536000);
  return taskq.update_profile(p_name, jsonb_build_object('priority_aging_seconds', p_seconds), p_actor,
                              'queue.set_aging');
end $$;

-- Claims up to p_limit ready jobs of one gated queue. With p_cap (the effective max_running) the
-- queue's row lock serializes this queue's claims across every gateway, and the running count is
-- read after the lock (each statement of a plpgsql function takes a fresh snapshot), so the cap is
-- never exceeded. With p_aging_seconds, effective priority = priority + one step per p_aging_seconds
-- waited. Jobs whose flow key is in p_blocked are skipped (no head-of-line blocking). When the cap
-- leaves no room, returns one row with a null id and room = 0.
create function taskq.claim_queue(p_queue text, p_limit integer, p_lease_ms integer, p_worker text,
                                  p_now timestamptz, p_cap integer, p_aging_seconds integer,
                                  p_blocked text[])
returns table (id text, queue text, attempt integer, max_attempts integer, lease_deadline timestamptz,
               payload bytea, content_type text, priority smallint, flow_key text,
               enqueued_at timestamptz, headers jsonb, room integer)
language plpgsql volatile as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  v_room integer := p_limit;
  v_ids bigint[];
begin
  if p_cap is not null then
    perform 1 from taskq.queues q where q.name = p_queue for update;
    select greatest(0, p_cap - count(*))::int into v_room
    from taskq.jobs j where j.queue = p_queue and j.state = 'running';
    v_room := least(v_room, p_limit);
    if v_room = 0 then
      return query select null::text, p_queue, null::int, null::int, null::timestamptz, null::bytea, null::text,
        null::smallint, null::text, null::timestamptz, null::jsonb, 0;
      return;
    end if;
  end if;
  if p_aging_seconds is null then
    select array_agg(c.id) into v_ids from (
      select j.id from taskq.jobs j
      where j.state = 'queued' and j.queue = p_queue
        and (j.expires_at is null or j.expires_at > v_now)
        and (j.flow_key is null or not (j.flow_key = any(coalesce(p_blocked, '{}'))))
      order by j.priority desc, j.run_at, j.id
      limit v_room for update skip locked) c;
  else
    -- Two jobs that waited equally keep their order: the step is the same for both.
    select array_agg(c.id) into v_ids from (
      select j.id from taskq.jobs j
      where j.state = 'queued' and j.queue = p_queue
        and (j.expires_at is null or j.expires_at > v_now)
        and (j.flow_key is null or not (j.flow_key = any(coalesce(p_blocked, '{}'))))
      order by j.priority + floor(extract(epoch from (v_now - j.run_at)) / p_aging_seconds) desc, j.run_at, j.id
      limit v_room for update skip locked) c;
  end if;
  return query
  update taskq.jobs j set
    state = 'running',
    attempt = j.attempt + 1,
    started_at = v_now,
    lease_ms = p_lease_ms,
    lease_deadline = v_now + p_lease_ms * interval '1 millisecond',
    worker_id = p_worker
  where j.id = any(coalesce(v_ids, '{}'))
  returning j.id::text, j.queue, j.attempt, j.max_attempts, j.lease_deadline, j.payload, j.content_type,
            j.priority, j.flow_key, j.enqueued_at, j.headers, v_room;
end $$;
