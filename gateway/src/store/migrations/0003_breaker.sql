-- taskq schema, version 3: the circuit breaker (fleet-wide: its state is the queue's row, so every
-- gateway sees one breaker), its rolling-window samples, and job events.
--
-- The breaker is configured when breaker_failure_threshold is not null. Triggers: streak (always on
-- with the breaker), rate and latency (each optional). States: closed -> open (a trigger fired, or a
-- manual trip) -> half_open (the cooldown is over and one probe job was handed out) -> closed (enough
-- probe successes; starts the ramp) or open again (the probe failed, or its lease expired).
-- Every failed attempt counts as a failure (retryable or not: the downstream failed either way); a
-- cancelled settle counts as neither.

alter table taskq.queues
  add column breaker_failure_threshold integer,
  add column breaker_cooldown_seconds integer,
  add column breaker_half_open_successes integer,
  add column breaker_rate_failure_ratio double precision,
  add column breaker_rate_window_seconds integer,
  add column breaker_rate_min_volume integer,
  add column breaker_latency_threshold_ms integer,
  add column breaker_latency_window_seconds integer,
  add column breaker_latency_min_volume integer,
  add column breaker_state text not null default 'closed' check (breaker_state in ('closed', 'open', 'half_open')),
  add column breaker_failure_streak integer not null default 0,
  add column breaker_opened_total integer not null default 0,
  add column breaker_tripped_at timestamptz,
  add column breaker_probe_job_id bigint,
  add column breaker_probe_attempt integer,
  add column breaker_probe_successes integer not null default 0;

-- An open or half-open breaker gates the queue: the plain batched claim skips it, even before a
-- gateway hears of the change.
alter table taskq.queues drop column gated;
alter table taskq.queues add column gated boolean generated always as (paused or max_running is not null
  or throttle_limit is not null or claim_rate_per_minute is not null or priority_aging_seconds is not null
  or breaker_state <> 'closed') stored;

-- One row per settle of a queue whose breaker has a rate or latency trigger, for the rolling windows.
-- The maintenance tick prunes rows older than the queue's largest window.
create table taskq.breaker_samples (
  queue text not null,
  at timestamptz not null,
  failed boolean not null,
  latency_ms integer not null
);
create index breaker_samples_queue_at_idx on taskq.breaker_samples (queue, at);

-- Events on a job: the breaker's automatic transitions (breaker_opened, breaker_reopened,
-- breaker_closed) are recorded on the job whose settle (or lost lease) caused them.
create table taskq.job_events (
  id bigint generated always as identity primary key,
  job_id bigint not null,
  event_type text not null,
  data jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index job_events_job_idx on taskq.job_events (job_id);

create function taskq.breaker_settings(q taskq.queues) returns jsonb language sql immutable as $$
  select case when q.breaker_failure_threshold is null then null else jsonb_build_object(
    'failure_threshold', q.breaker_failure_threshold,
    'cooldown_seconds', q.breaker_cooldown_seconds,
    'half_open_successes', q.breaker_half_open_successes,
    'rate', case when q.breaker_rate_failure_ratio is null then null else jsonb_build_object(
      'failure_ratio', q.breaker_rate_failure_ratio, 'window_seconds', q.breaker_rate_window_seconds,
      'min_volume', q.breaker_rate_min_volume) end,
    'latency', case when q.breaker_latency_threshold_ms is null then null else jsonb_build_object(
      'threshold_ms', q.breaker_latency_threshold_ms, 'window_seconds', q.breaker_latency_window_seconds,
      'min_volume', q.breaker_latency_min_volume) end,
    'state', q.breaker_state,
    'failure_streak', q.breaker_failure_streak,
    'opened_total', q.breaker_opened_total,
    'tripped_at', q.breaker_tripped_at,
    'probe_job_id', q.breaker_probe_job_id::text,
    'probe_successes', q.breaker_probe_successes) end
$$;

create or replace function taskq.queue_settings(q taskq.queues) returns jsonb language sql immutable as $$
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
    'notify_mode', q.notify_mode,
    'breaker', taskq.breaker_settings(q))
$$;

-- set_breaker_config(queue, failure_threshold, cooldown_seconds, half_open_successes, actor): turns the
-- breaker on (streak trigger) or changes it; a null threshold turns the whole breaker off (rate and
-- latency triggers included) and closes it.
create function taskq.set_breaker_config(p_name text, p_failure_threshold integer, p_cooldown_seconds integer,
                                         p_half_open_successes integer, p_actor text) returns jsonb
language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  perform taskq.check_int('failure_threshold', p_failure_threshold, 1, 1000000);
  if p_failure_threshold is not null then
    if p_cooldown_seconds is null then perform taskq.invalid('cooldown_seconds', 'is required'); end if;
    perform taskq.check_int('cooldown_seconds', p_cooldown_seconds, 1, 86400);
    perform taskq.check_int('half_open_successes', p_half_open_successes, 1, 1000);
  end if;
  q := taskq.lock_queue(p_name);
  before := taskq.queue_settings(q);
  if p_failure_threshold is null then
    update taskq.queues set breaker_failure_threshold = null, breaker_cooldown_seconds = null,
      breaker_half_open_successes = null, breaker_rate_failure_ratio = null, breaker_rate_window_seconds = null,
      breaker_rate_min_volume = null, breaker_latency_threshold_ms = null, breaker_latency_window_seconds = null,
      breaker_latency_min_volume = null, breaker_state = 'closed', breaker_failure_streak = 0,
      breaker_tripped_at = null, breaker_probe_job_id = null, breaker_probe_attempt = null,
      breaker_probe_successes = 0, updated_at = now()
    where name = p_name returning * into q;
    delete from taskq.breaker_samples where queue = p_name;
  else
    update taskq.queues set breaker_failure_threshold = p_failure_threshold,
      breaker_cooldown_seconds = p_cooldown_seconds,
      breaker_half_open_successes = coalesce(p_half_open_successes, 1), updated_at = now()
    where name = p_name returning * into q;
  end if;
  perform taskq.audit(p_name, 'queue.set_breaker', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- set_breaker_rate(queue, failure_ratio, window_seconds, min_volume, actor): trips when at least
-- failure_ratio of the settles of the last window_seconds failed, over at least min_volume settles.
-- A null ratio removes the rate trigger.
create function taskq.set_breaker_rate(p_name text, p_failure_ratio double precision, p_window_seconds integer,
                                       p_min_volume integer, p_actor text) returns jsonb
language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  if p_failure_ratio is not null then
    if p_failure_ratio = 'NaN'::float8 or p_failure_ratio <= 0 or p_failure_ratio > 1 then
      perform taskq.invalid('failure_ratio', format('must be above 0 and at most 1 (got %s)', p_failure_ratio));
    end if;
    if p_window_seconds is null then perform taskq.invalid('window_seconds', 'is required'); end if;
    if p_min_volume is null then perform taskq.invalid('min_volume', 'is required'); end if;
    perform taskq.check_int('window_seconds', p_window_seconds, 1, 86400);
    perform taskq.check_int('min_volume', p_min_volume, 1, 1000000);
  end if;
  q := taskq.lock_queue(p_name);
  if p_failure_ratio is not null and q.breaker_failure_threshold is null then
    perform taskq.invalid('breaker', 'is off: turn it on with set_breaker_config first');
  end if;
  before := taskq.queue_settings(q);
  update taskq.queues set breaker_rate_failure_ratio = p_failure_ratio,
    breaker_rate_window_seconds = case when p_failure_ratio is null then null else p_window_seconds end,
    breaker_rate_min_volume = case when p_failure_ratio is null then null else p_min_volume end,
    updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.set_breaker_rate', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- set_breaker_latency(queue, threshold_ms, window_seconds, min_volume, actor): trips when the average
-- execution latency of the settles of the last window_seconds (successes included) is at least
-- threshold_ms, over at least min_volume settles. A null threshold removes the latency trigger.
create function taskq.set_breaker_latency(p_name text, p_threshold_ms integer, p_window_seconds integer,
                                          p_min_volume integer, p_actor text) returns jsonb
language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  if p_threshold_ms is not null then
    perform taskq.check_int('threshold_ms', p_threshold_ms, 1, 86400000);
    if p_window_seconds is null then perform taskq.invalid('window_seconds', 'is required'); end if;
    if p_min_volume is null then perform taskq.invalid('min_volume', 'is required'); end if;
    perform taskq.check_int('window_seconds', p_window_seconds, 1, 86400);
    perform taskq.check_int('min_volume', p_min_volume, 1, 1000000);
  end if;
  q := taskq.lock_queue(p_name);
  if p_threshold_ms is not null and q.breaker_failure_threshold is null then
    perform taskq.invalid('breaker', 'is off: turn it on with set_breaker_config first');
  end if;
  before := taskq.queue_settings(q);
  update taskq.queues set breaker_latency_threshold_ms = p_threshold_ms,
    breaker_latency_window_seconds = case when p_threshold_ms is null then null else p_window_seconds end,
    breaker_latency_min_volume = case when p_threshold_ms is null then null else p_min_volume end,
    updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.set_breaker_latency', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- trip_breaker(queue, actor): force open (planned downstream maintenance), with a fresh cooldown.
create function taskq.trip_breaker(p_name text, p_actor text) returns jsonb language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  if q.breaker_failure_threshold is null then
    raise exception using errcode = '55000',
      message = 'queue ' || p_name || ' has no breaker - turn it on with set_breaker_config first';
  end if;
  before := taskq.queue_settings(q);
  update taskq.queues set breaker_state = 'open', breaker_tripped_at = now(),
    breaker_opened_total = breaker_opened_total + 1, breaker_probe_job_id = null, breaker_probe_attempt = null,
    breaker_probe_successes = 0, updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, 'queue.trip_breaker', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- close_breaker(queue, actor): force closed, streak and windows reset, and the slow-start ramp starts
-- when the queue has ramp_seconds.
create function taskq.close_breaker(p_name text, p_actor text) returns jsonb language plpgsql as $$
declare
  q taskq.queues;
  before jsonb;
begin
  perform taskq.check_actor(p_actor);
  q := taskq.lock_queue(p_name);
  if q.breaker_failure_threshold is null then
    raise exception using errcode = '55000',
      message = 'queue ' || p_name || ' has no breaker - turn it on with set_breaker_config first';
  end if;
  before := taskq.queue_settings(q);
  update taskq.queues set breaker_state = 'closed', breaker_failure_streak = 0, breaker_probe_job_id = null,
    breaker_probe_attempt = null, breaker_probe_successes = 0,
    ramp_started_at = case when ramp_seconds is not null then now() else ramp_started_at end,
    updated_at = now()
  where name = p_name returning * into q;
  delete from taskq.breaker_samples where queue = p_name;
  perform taskq.audit(p_name, 'queue.close_breaker', p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;

-- Records settles of queues with a breaker and runs the state machine. Arrays are parallel, one entry
-- per applied settle: kind is 'success' | 'failure' | 'cancel'. Queues are locked in name order, so
-- concurrent settle batches never deadlock. Returns the number of transitions.
create function taskq.breaker_record(p_queues text[], p_ids bigint[], p_attempts integer[], p_kinds text[],
                                     p_latency_ms integer[], p_now timestamptz) returns integer
language plpgsql as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  r record;
  q taskq.queues;
  cur text := null;
  failed boolean;
  trig jsonb;
  n integer;
  nfail integer;
  avg_ms double precision;
  transitions integer := 0;
begin
  for r in
    select * from unnest(p_queues, p_ids, p_attempts, p_kinds, p_latency_ms) as t(queue, id, attempt, kind, latency_ms)
    order by t.queue, t.id
  loop
    if cur is distinct from r.queue then
      select * into q from taskq.queues where name = r.queue for update;
      cur := r.queue;
    end if;
    continue when q.breaker_failure_threshold is null;
    if r.kind = 'cancel' then
      -- A cancelled probe frees the probe slot without counting either way.
      if q.breaker_state = 'half_open' and q.breaker_probe_job_id = r.id and q.breaker_probe_attempt = r.attempt then
        update taskq.queues set breaker_probe_job_id = null, breaker_probe_attempt = null
        where name = r.queue returning * into q;
        perform pg_notify('taskq_queues', r.queue);
      end if;
      continue;
    end if;
    failed := r.kind = 'failure';
    if q.breaker_rate_failure_ratio is not null or q.breaker_latency_threshold_ms is not null then
      insert into taskq.breaker_samples (queue, at, failed, latency_ms)
      values (r.queue, v_now, failed, greatest(0, coalesce(r.latency_ms, 0)));
    end if;
    q.breaker_failure_streak := case when failed then q.breaker_failure_streak + 1 else 0 end;
    if q.breaker_state = 'closed' then
      trig := null;
      if q.breaker_failure_streak >= q.breaker_failure_threshold then
        trig := jsonb_build_object('trigger', 'streak', 'failure_streak', q.breaker_failure_streak,
                                   'failure_threshold', q.breaker_failure_threshold);
      end if;
      if trig is null and q.breaker_rate_failure_ratio is not null and failed then
        select count(*), count(*) filter (where s.failed) into n, nfail from taskq.breaker_samples s
        where s.queue = r.queue and s.at > v_now - q.breaker_rate_window_seconds * interval '1 second'
          and s.at <= v_now;
        if n >= q.breaker_rate_min_volume and nfail::float8 / n >= q.breaker_rate_failure_ratio then
          trig := jsonb_build_object('trigger', 'rate', 'failures', nfail, 'settles', n,
            'failure_ratio', round((nfail::numeric / n), 4), 'threshold_ratio', q.breaker_rate_failure_ratio,
            'window_seconds', q.breaker_rate_window_seconds, 'min_volume', q.breaker_rate_min_volume);
        end if;
      end if;
      if trig is null and q.breaker_latency_threshold_ms is not null then
        select count(*), avg(s.latency_ms) into n, avg_ms from taskq.breaker_samples s
        where s.queue = r.queue and s.at > v_now - q.breaker_latency_window_seconds * interval '1 second'
          and s.at <= v_now;
        if n >= q.breaker_latency_min_volume and avg_ms >= q.breaker_latency_threshold_ms then
          trig := jsonb_build_object('trigger', 'latency', 'avg_latency_ms', round(avg_ms::numeric, 1),
            'settles', n, 'threshold_ms', q.breaker_latency_threshold_ms,
            'window_seconds', q.breaker_latency_window_seconds, 'min_volume', q.breaker_latency_min_volume);
        end if;
      end if;
      if trig is not null then
        update taskq.queues set breaker_state = 'open', breaker_tripped_at = v_now,
          breaker_opened_total = breaker_opened_total + 1, breaker_failure_streak = q.breaker_failure_streak,
          breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_probe_successes = 0
        where name = r.queue returning * into q;
        insert into taskq.job_events (job_id, event_type, data, created_at)
        values (r.id, 'breaker_opened', trig || jsonb_build_object('queue', r.queue), v_now);
        perform pg_notify('taskq_queues', r.queue);
        transitions := transitions + 1;
        continue;
      end if;
    elsif q.breaker_state = 'half_open' and q.breaker_probe_job_id = r.id and q.breaker_probe_attempt = r.attempt then
      if failed then
        update taskq.queues set breaker_state = 'open', breaker_tripped_at = v_now,
          breaker_opened_total = breaker_opened_total + 1, breaker_failure_streak = q.breaker_failure_streak,
          breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_probe_successes = 0
        where name = r.queue returning * into q;
        insert into taskq.job_events (job_id, event_type, data, created_at)
        values (r.id, 'breaker_reopened', jsonb_build_object('queue', r.queue, 'trigger', 'probe_failed',
          'cooldown_seconds', q.breaker_cooldown_seconds), v_now);
      elsif q.breaker_probe_successes + 1 >= q.breaker_half_open_successes then
        update taskq.queues set breaker_state = 'closed', breaker_failure_streak = 0,
          breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_probe_successes = 0,
          ramp_started_at = case when ramp_seconds is not null then v_now else ramp_started_at end
        where name = r.queue returning * into q;
        delete from taskq.breaker_samples where queue = r.queue;
        insert into taskq.job_events (job_id, event_type, data, created_at)
        values (r.id, 'breaker_closed', jsonb_build_object('queue', r.queue,
          'probe_successes', q.breaker_half_open_successes), v_now);
      else
        -- One more probe to go: the slot is free for the next claim.
        update taskq.queues set breaker_probe_successes = breaker_probe_successes + 1,
          breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_failure_streak = 0
        where name = r.queue returning * into q;
      end if;
      perform pg_notify('taskq_queues', r.queue);
      transitions := transitions + 1;
      continue;
    end if;
    update taskq.queues set breaker_failure_streak = q.breaker_failure_streak where name = r.queue;
  end loop;
  return transitions;
end $$;

-- The lease of a half-open breaker's probe expired: a failure (the downstream hung); the breaker
-- re-opens with a fresh cooldown and the probe slot is free again.
create function taskq.breaker_probe_lost(p_queue text, p_id bigint, p_attempt integer, p_now timestamptz)
returns integer language plpgsql as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  q taskq.queues;
begin
  select * into q from taskq.queues where name = p_queue for update;
  if q.breaker_state <> 'half_open' or q.breaker_probe_job_id is distinct from p_id
     or q.breaker_probe_attempt is distinct from p_attempt then
    return 0;
  end if;
  update taskq.queues set breaker_state = 'open', breaker_tripped_at = v_now,
    breaker_opened_total = breaker_opened_total + 1, breaker_failure_streak = breaker_failure_streak + 1,
    breaker_probe_job_id = null, breaker_probe_attempt = null, breaker_probe_successes = 0
  where name = p_queue;
  insert into taskq.job_events (job_id, event_type, data, created_at)
  values (p_id, 'breaker_reopened', jsonb_build_object('queue', p_queue, 'trigger', 'probe_lease_expired',
    'cooldown_seconds', q.breaker_cooldown_seconds), v_now);
  perform pg_notify('taskq_queues', p_queue);
  return 1;
end $$;

-- claim_queue gains the breaker gate (verdict and retry_ms columns). An open breaker within its
-- cooldown answers BREAKER_OPEN with the exact remaining cooldown; once the cooldown is over, the
-- queue's row lock serializes claims so exactly one job, fleet-wide, is handed out as the probe
-- (the breaker becomes half_open); while the probe is out, BREAKER_PROBING.
drop function taskq.claim_queue(text, integer, integer, text, timestamptz, integer, integer, text[]);

create function taskq.claim_queue(p_queue text, p_limit integer, p_lease_ms integer, p_worker text,
                                  p_now timestamptz, p_cap integer, p_aging_seconds integer,
                                  p_blocked text[])
returns table (id text, queue text, attempt integer, max_attempts integer, lease_deadline timestamptz,
               payload bytea, content_type text, priority smallint, flow_key text,
               enqueued_at timestamptz, headers jsonb, room integer, verdict text, retry_ms integer)
language plpgsql volatile as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  v_room integer := p_limit;
  v_ids bigint[];
  v_probe boolean := false;
  b record;
  v_attempt integer;
begin
  -- Unlocked first: a breaker that is closed, open within its cooldown, or probing needs no lock.
  for pass in 1..2 loop
    if pass = 1 then
      select q.breaker_state, q.breaker_tripped_at, q.breaker_cooldown_seconds, q.breaker_probe_job_id,
        q.breaker_probe_attempt into b from taskq.queues q where q.name = p_queue;
    else
      select q.breaker_state, q.breaker_tripped_at, q.breaker_cooldown_seconds, q.breaker_probe_job_id,
        q.breaker_probe_attempt into b from taskq.queues q where q.name = p_queue for update;
    end if;
    exit when b.breaker_state is null or b.breaker_state = 'closed';
    if b.breaker_state = 'open' and v_now < b.breaker_tripped_at + b.breaker_cooldown_seconds * interval '1 second' then
      return query select null::text, p_queue, null::int, null::int, null::timestamptz, null::bytea, null::text,
        null::smallint, null::text, null::timestamptz, null::jsonb, 0, 'BREAKER_OPEN'::text,
        greatest(1, ceil(extract(epoch from (b.breaker_tripped_at + b.breaker_cooldown_seconds * interval '1 second'
          - v_now)) * 1000))::int;
      return;
    end if;
    -- A probe that is no longer running under its attempt (put back undelivered, or unclaimed by a
    -- flow key) frees the slot.
    if b.breaker_state = 'half_open' and b.breaker_probe_job_id is not null and exists (
      select 1 from taskq.jobs j where j.id = b.breaker_probe_job_id and j.attempt = b.breaker_probe_attempt
        and j.state = 'running') then
      return query select null::text, p_queue, null::int, null::int, null::timestamptz, null::bytea, null::text,
        null::smallint, null::text, null::timestamptz, null::jsonb, 0, 'BREAKER_PROBING'::text, 1000;
      return;
    end if;
    -- Open past its cooldown, or half-open between probes: one probe, decided under the row lock.
    v_probe := pass = 2;
  end loop;
  if v_probe then v_room := 1; end if;
  if p_cap is not null then
    perform 1 from taskq.queues q where q.name = p_queue for update;
    select greatest(0, p_cap - count(*))::int into v_room
    from taskq.jobs j where j.queue = p_queue and j.state = 'running';
    v_room := least(v_room, p_limit, case when v_probe then 1 end);
    if v_room = 0 then
      return query select null::text, p_queue, null::int, null::int, null::timestamptz, null::bytea, null::text,
        null::smallint, null::text, null::timestamptz, null::jsonb, 0, null::text, null::int;
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
    -- Aging: effective priority = priority + one step per p_aging_seconds waited. Within one priority
    -- level the oldest jobs age most, so only the oldest v_room of each level can win: they are read
    -- level by level with index scans (a skip scan over the distinct priorities), then ranked. Sorting
    -- the whole backlog by the aged priority instead cost 46% of drain throughput at 20k queued.
    -- Two jobs that waited equally keep their order: the step is the same for both.
    with recursive levels(p) as (
      (select j.priority from taskq.jobs j where j.state = 'queued' and j.queue = p_queue
       order by j.priority desc limit 1)
      union all
      select (select j.priority from taskq.jobs j where j.state = 'queued' and j.queue = p_queue and j.priority < l.p
              order by j.priority desc limit 1)
      from levels l where l.p is not null
    )
    select array_agg(c.id) into v_ids from (
      select k.id from levels l
      cross join lateral (
        select j.id, j.priority, j.run_at from taskq.jobs j
        where j.state = 'queued' and j.queue = p_queue and j.priority = l.p
          and (j.expires_at is null or j.expires_at > v_now)
          and (j.flow_key is null or not (j.flow_key = any(coalesce(p_blocked, '{}'))))
        order by j.run_at, j.id
        limit v_room for update skip locked) k
      where l.p is not null
      order by k.priority + floor(extract(epoch from (v_now - k.run_at)) / p_aging_seconds) desc, k.run_at, k.id
      limit v_room) c;
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
            j.priority, j.flow_key, j.enqueued_at, j.headers, v_room, null::text, null::int;
  if v_probe and v_ids is not null and cardinality(v_ids) > 0 then
    select j.attempt into v_attempt from taskq.jobs j where j.id = v_ids[1];
    update taskq.queues q set breaker_state = 'half_open', breaker_probe_job_id = v_ids[1],
      breaker_probe_attempt = v_attempt
    where q.name = p_queue;
    perform pg_notify('taskq_queues', p_queue);
  end if;
end $$;

-- Flow state per queue (settings and breaker state), for operators.
create view taskq.queue_flow as
select name as queue, paused, max_running, throttle_limit, throttle_period_ms, claim_rate_per_minute, claim_burst,
  ramp_seconds, ramp_started_at, priority_aging_seconds, default_ttl_seconds, notify_mode,
  breaker_failure_threshold, breaker_cooldown_seconds, breaker_half_open_successes,
  breaker_rate_failure_ratio, breaker_rate_window_seconds, breaker_rate_min_volume,
  breaker_latency_threshold_ms, breaker_latency_window_seconds, breaker_latency_min_volume,
  breaker_state, breaker_failure_streak, breaker_opened_total, breaker_tripped_at, breaker_probe_job_id,
  breaker_probe_successes, updated_at
from taskq.queues;
