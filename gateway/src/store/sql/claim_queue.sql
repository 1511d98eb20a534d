-- claim_queue(queue, limit, lease_ms, worker, now, cap, aging_seconds, blocked): claims up to p_limit
-- ready jobs of one gated queue (the plain batched claim, jobs_claim, skips those) and decides, under the
-- queue's row lock, the gates that live in Postgres:
-- - paused: answers PAUSED (verdict column; retry_ms null: the gateway's own retry). A verb (pause,
--   trip, ...) holds the row exclusively until it commits, so a claim that waits for it reads its
--   change: no claim starts after a pause commits, on any gateway, whatever its cached settings.
-- - the breaker: open within its cooldown answers BREAKER_OPEN with the exact remaining cooldown (in
--   retry_ms); once the cooldown is over, exactly one job, fleet-wide, is handed out as the probe (the
--   breaker becomes half_open); while the probe is out, BREAKER_PROBING.
-- - p_cap (the effective max_running): the running count is read after the row lock (each statement of
--   a plpgsql function takes a fresh snapshot), so the cap is never exceeded. When it leaves no room,
--   one row with a null id and room = 0.
-- With p_aging_seconds, effective priority = priority + one step per p_aging_seconds waited. Jobs whose
-- flow key is in p_blocked are skipped (no head-of-line blocking).
create or replace function taskq.claim_queue(p_queue text, p_limit integer, p_lease_ms integer, p_worker text,
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
  -- The lock a claim holds on the queue's row: exclusive when it decides a probe or counts running jobs
  -- against the cap; otherwise key share, which claims hold together and only a verb's lock waits on.
  v_exclusive boolean := p_cap is not null;
begin
  -- Pass 1 reads unlocked, to learn which lock pass 2 needs; pass 2 decides under the row lock. A verb
  -- (pause, trip, ...) holds that row exclusively until it commits, so a claim that waits for it reads
  -- its change: no claim starts after a pause commits, on any gateway, whatever its cached settings.
  for pass in 1..2 loop
    if pass = 1 then
      select q.paused, q.breaker_state, q.breaker_tripped_at, q.breaker_cooldown_seconds, q.breaker_probe_job_id,
        q.breaker_probe_attempt into b from taskq.queues q where q.name = p_queue;
    elsif v_exclusive then
      select q.paused, q.breaker_state, q.breaker_tripped_at, q.breaker_cooldown_seconds, q.breaker_probe_job_id,
        q.breaker_probe_attempt into b from taskq.queues q where q.name = p_queue for update;
    else
      select q.paused, q.breaker_state, q.breaker_tripped_at, q.breaker_cooldown_seconds, q.breaker_probe_job_id,
        q.breaker_probe_attempt into b from taskq.queues q where q.name = p_queue for key share;
    end if;
    exit when b.paused is null;
    if b.paused then
      return query select null::text, p_queue, null::int, null::int, null::timestamptz, null::bytea, null::text,
        null::smallint, null::text, null::timestamptz, null::jsonb, 0, 'PAUSED'::text, null::int;
      return;
    end if;
    continue when b.breaker_state = 'closed';
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
    -- Open past its cooldown, or half-open between probes: one probe, decided under the exclusive lock.
    if pass = 1 then
      v_exclusive := true;
    elsif not v_exclusive then
      -- The breaker changed between the passes: upgrading a shared lock could deadlock with another
      -- claim doing the same, so this one steps aside for a moment.
      return query select null::text, p_queue, null::int, null::int, null::timestamptz, null::bytea, null::text,
        null::smallint, null::text, null::timestamptz, null::jsonb, 0, 'BREAKER_PROBING'::text, 1;
      return;
    else
      v_probe := true;
    end if;
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
