-- The claim: pause, breaker and max_running decided under each queue's row lock, then the best ready
-- jobs picked once for one or more polls of the same queues and leased.
--
-- It reads in four parts: the gates under each queue's row lock, the pick, the lease, and what the
-- lease filled (a breaker's probe; the polls a capped queue's last room did not reach).
--
-- Polls of the same queues that reach a gateway together are one call: p_limits, p_lease_ms and
-- p_workers hold one entry per poll. The best ready jobs are picked once for all of them and handed out
-- in poll order: poll 1 takes ranks 1..limit1, poll 2 the next limit2, and so on, so no poll gets more
-- than its limit and every job goes to exactly one poll, with that poll's lease and worker id.
--
-- A row with a verdict (and a null id) declines one queue: PAUSED, BREAKER_OPEN, BREAKER_PROBING,
-- MAX_RUNNING or RAMPING, with retry_ms null when the gateway's own retry applies. Its poll is null
-- when it declines the queue for every poll, or names the one poll it declines: a poll left without a
-- job of a queue whose last room (under its cap, or its one probe) went to an earlier poll. With all
-- limits 0 it claims nothing and only answers whether one of these gates declines.
--
-- The row lock: a verb (pause, trip, set_queue_concurrency...) holds its queue's row exclusively until
-- it commits, so a claim that waits for it reads its change: no claim starts after a pause commits,
-- on any gateway. Claims hold key share together, except where they count running jobs against a cap
-- or hand out a breaker's probe: that takes the row exclusively. Rows are locked in name order, so
-- claims of overlapping queues never deadlock.
--
-- plan_cache_mode = force_generic_plan: as a bare prepared statement Postgres re-planned the pick on
-- every execution (0.4-0.7 ms, a third of the statement at 50 jobs); inside the function the plan is
-- made once per connection (again after an analyze), from the statistics of that moment. Made on a
-- nearly empty table, it read every ready job through the (queue, run_at) index and sorted them: a
-- claim's cost grew with the backlog it drained. enable_sort and
-- enable_seqscan off leave the planner one way to the best jobs, whatever the statistics: the ready
-- index, already in rank order (taskq.jobs_settle does the same). A plan that needs a sort anyway (the
-- pick over several queues) then costs more than jit_above_cost, and JIT-compiling it took 300-800 ms
-- per claim: jit is off. Timestamps come back as epoch milliseconds: the gateway encodes them
-- straight into the response, with no date parsing per row.
create or replace function taskq.jobs_claim(p_queues text[], p_limits integer[], p_lease_ms integer[],
                                            p_workers text[], p_now timestamptz, p_blocked text[])
returns table (poll integer, id text, queue text, attempt integer, max_attempts integer,
               lease_deadline_ms float8, payload bytea, content_type text, priority smallint, flow_key text,
               enqueued_at_ms float8, headers jsonb, verdict text, retry_ms integer)
language plpgsql volatile
set plan_cache_mode = force_generic_plan
set enable_sort = off
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
  v_total integer := (select coalesce(sum(l), 0) from unnest(p_limits) as l);
  -- The queues that may be claimed, the most jobs each may give, and its priority aging.
  v_open text[] := '{}';
  v_rooms integer[] := '{}';
  v_aging integer[] := '{}';
  -- Queues whose breaker hands out its probe with this claim.
  v_probes text[] := '{}';
  -- Candidates of queues with priority aging, picked per queue beforehand.
  v_aged_ids bigint[] := '{}';
  v_aged_queues text[] := '{}';
  v_aged_rank float8[] := '{}';
  v_aged_run_at timestamptz[] := '{}';
  -- What this claim leases: job, its queue, and the poll, lease and worker it goes to.
  v_ids bigint[];
  v_queues text[];
  v_polls integer[];
  v_leases integer[];
  v_workers text[];
  -- The picked jobs' row versions (the one-queue pick only), locked by this claim until it commits.
  v_ctids tid[];
  q record;
  b record;
  v_cap integer;
  v_room integer;
  v_age integer;
  -- The one priority level of the ready jobs of an aging queue claimed alone, when they have one.
  v_level smallint;
  -- The queues with a row, decided above; v_name, each queue asked for.
  v_seen text[] := '{}';
  v_name text;
  -- The room a gate (probe or cap) left a queue, and the verdict of the polls left without a job of
  -- it once this claim fills that room.
  v_gate text;
  v_gate_room integer;
  v_gate_retry integer;
  v_full text[] := '{}';
  v_full_rooms integer[] := '{}';
  v_full_gates text[] := '{}';
  v_full_retry integer[] := '{}';
  v_i integer;
  -- Handing the picked jobs to the polls in turn (one queue): jobs handed so far, and to this poll.
  v_handed integer;
  v_poll integer;
  v_n integer;
begin
  -- Part 1, the gates under the row lock: each queue declined by pause, its breaker or its cap
  -- answers its verdict row; each other queue gets its room (the most jobs it may give).
  for q in
    select g.name, g.max_running is not null or g.breaker_state <> 'closed' as exclusive
    from taskq.queues g where g.name = any(p_queues)
    order by g.name
  loop
    v_seen := v_seen || q.name;
    v_room := v_total;
    v_gate := null;
    v_gate_room := null;
    v_gate_retry := null;
    if q.exclusive then
      select g.* into b from taskq.queues g where g.name = q.name for update;
    else
      select g.* into b from taskq.queues g where g.name = q.name for key share;
    end if;
    -- Gate 1, pause.
    if b.paused then
      return query select * from taskq.claim_declined(q.name, 'PAUSED', null);
      continue;
    end if;
    -- Gate 2, the breaker: open for its cooldown, then one probe at a time until it closes.
    if b.breaker_state = 'open'
       and v_now < b.breaker_tripped_at + b.breaker_cooldown_seconds * interval '1 second' then
      return query select * from taskq.claim_declined(q.name, 'BREAKER_OPEN',
        greatest(1, ceil(extract(epoch from (b.breaker_tripped_at
          + b.breaker_cooldown_seconds * interval '1 second' - v_now)) * 1000))::int);
      continue;
    end if;
    -- A probe that is no longer running under its attempt (put back undelivered, or unclaimed by a
    -- flow key) frees the slot. Looked up by id: `is true` keeps the planner off the index of every
    -- running job (see jobs_settle.sql).
    if b.breaker_state = 'half_open' and b.breaker_probe_job_id is not null and exists (
      select 1 from taskq.live_jobs j where j.id = b.breaker_probe_job_id and j.attempt = b.breaker_probe_attempt
        and (j.state = 'running') is true) then
      return query select * from taskq.claim_declined(q.name, 'BREAKER_PROBING', 1000);
      continue;
    end if;
    -- The row changed between the unlocked read and the lock so that it now needs the exclusive
    -- lock: upgrading could deadlock with another claim doing the same, so this one steps aside for
    -- a moment.
    if not q.exclusive and (b.max_running is not null or b.breaker_state <> 'closed') then
      return query select * from taskq.claim_declined(q.name,
        case when b.breaker_state <> 'closed' then 'BREAKER_PROBING' else 'MAX_RUNNING' end, 1);
      continue;
    end if;
    if b.breaker_state <> 'closed' then
      -- Open past its cooldown, or half-open between probes: one job, the probe.
      v_probes := v_probes || q.name;
      v_room := 1;
      v_gate := 'BREAKER_PROBING';
      v_gate_room := 1;
      v_gate_retry := 1000;
    end if;
    -- Gate 3, max_running, scaled by the slow-start ramp after a resume or a breaker close (never
    -- below one job): counted under the exclusive lock, so the fleet never runs more.
    if b.max_running is not null then
      v_cap := taskq.ramped_max_running(b.max_running, b.ramp_seconds, b.ramp_started_at, v_now);
      select v_cap - count(*) into v_i from taskq.live_jobs j where j.queue = q.name and j.state = 'running';
      if v_i <= 0 then
        return query select * from taskq.claim_declined(q.name,
          case when v_cap < b.max_running then 'RAMPING' else 'MAX_RUNNING' end, null);
        v_probes := array_remove(v_probes, q.name);
        continue;
      end if;
      if v_gate_room is null or v_i < v_gate_room then
        v_gate := case when v_cap < b.max_running then 'RAMPING' else 'MAX_RUNNING' end;
        v_gate_room := v_i;
        v_gate_retry := null;
      end if;
      v_room := least(v_room, v_i);
    end if;
    v_age := b.priority_aging_seconds;
    continue when v_room = 0;
    v_open := v_open || q.name;
    v_rooms := v_rooms || v_room;
    v_aging := v_aging || v_age;
    if v_gate is not null then
      v_full := v_full || q.name;
      v_full_rooms := v_full_rooms || v_gate_room;
      v_full_gates := v_full_gates || v_gate;
      v_full_retry := v_full_retry || v_gate_retry;
    end if;
  end loop;
  -- A queue without a row has no settings: no gate applies to it.
  foreach v_name in array p_queues loop
    continue when v_name = any(v_seen);
    v_seen := v_seen || v_name;
    v_open := v_open || v_name;
    v_rooms := v_rooms || v_total;
    v_aging := v_aging || null::integer;
  end loop;
  -- Nothing to claim (every queue declined, or only verdicts asked for): the locks go with no pick.
  if v_total = 0 or cardinality(v_open) = 0 then
    return;
  end if;

  -- Part 2, the pick: the best ready jobs within each queue's room, ranked across the queues, handed
  -- to the polls in poll order.
  --
  -- Aging moves jobs only across priority levels: within one level the oldest ages most, so a queue whose
  -- ready jobs share one level is in aged order in the ready index already. Two probes of that index
  -- (its lowest level, read from the end, then any higher one) find such a queue, and its pick takes
  -- that level only: a job of another level enqueued meanwhile waits for the next claim, which ranks
  -- the levels. Neither probe starts where the pick does: the front of a queue's range holds the
  -- entries of the jobs claimed since the last vacuum, which every scan from there steps over (20,000
  -- claimed: 100 index pages, 0.4 ms; these probes read 3-5 pages). Both are ordered by priority, as
  -- only that index is (sorts are off): written `exists`, a probe read every ready job of the queue
  -- through the (queue, run_at) index when planned on an empty table.
  if cardinality(v_open) = 1 and v_aging[1] is not null then
    v_level := (select j.priority from taskq.live_jobs j where j.state = 'queued' and j.queue = v_open[1]
                order by j.priority, j.run_at desc, j.id desc limit 1);
    if (select j.priority from taskq.live_jobs j where j.state = 'queued' and j.queue = v_open[1]
          and j.priority > v_level order by j.priority desc limit 1) is not null then
      v_level := null;
    end if;
  end if;

  if cardinality(v_open) = 1 and (v_aging[1] is null or v_level is not null) then
    -- One queue without priority aging (or with one level), as a worker's poll of one queue is: the best
    -- jobs are the first of one index scan (jobs_ready_idx), already in rank order, handed to the polls
    -- in turn. This is the ranking below for one queue, without its sort, window and join (a one-job
    -- claim 0.5 -> 0.3 ms, a 50-job claim 2.5 -> 1.9 ms in pgbench).
    select coalesce(array_agg(k.id), '{}'), coalesce(array_agg(k.ctid), '{}') into v_ids, v_ctids
    from (
      select j.id, j.ctid from taskq.live_jobs j
      where j.state = 'queued' and j.queue = v_open[1]
        and (v_level is null or j.priority = v_level)
        and (j.expires_at is null or j.expires_at > v_now)
        and (j.flow_key is null or j.flow_key <> all(p_blocked))
      order by j.priority desc, j.run_at, j.id
      limit v_rooms[1]
      for update skip locked) k;
    v_queues := array_fill(v_open[1], array[cardinality(v_ids)]);
    v_polls := '{}';
    v_leases := '{}';
    v_workers := '{}';
    v_handed := 0;
    for v_poll in 1 .. cardinality(p_limits) loop
      v_n := least(p_limits[v_poll], cardinality(v_ids) - v_handed);
      continue when v_n <= 0;
      v_polls := v_polls || array_fill(v_poll, array[v_n]);
      v_leases := v_leases || array_fill(p_lease_ms[v_poll], array[v_n]);
      v_workers := v_workers || array_fill(p_workers[v_poll], array[v_n]);
      v_handed := v_handed + v_n;
    end loop;
  else
    -- Aging: effective priority = priority + one step per aging period waited. Within one priority
    -- level the oldest jobs age most, so only the oldest `room` of each level can win: they are read
    -- level by level with index scans (a skip scan over the distinct priorities), then ranked. Sorting
    -- the whole backlog by the aged priority instead cost a large share of drain throughput.
    -- Two jobs that waited equally keep their order: the step is the same for both.
    for v_i in 1 .. cardinality(v_open) loop
      continue when v_aging[v_i] is null;
      with recursive levels(p) as (
        (select j.priority from taskq.live_jobs j where j.state = 'queued' and j.queue = v_open[v_i]
         order by j.priority desc limit 1)
        union all
        select (select j.priority from taskq.live_jobs j where j.state = 'queued' and j.queue = v_open[v_i]
                  and j.priority < l.p order by j.priority desc limit 1)
        from levels l where l.p is not null
      ), ranked as (
        select k.id, k.priority + floor(extract(epoch from (v_now - k.run_at)) / v_aging[v_i]) as rank, k.run_at
        from levels l
        cross join lateral (
          select j.id, j.priority, j.run_at from taskq.live_jobs j
          where j.state = 'queued' and j.queue = v_open[v_i] and j.priority = l.p
            and (j.expires_at is null or j.expires_at > v_now)
            and (j.flow_key is null or j.flow_key <> all(p_blocked))
          order by j.run_at, j.id
          limit v_rooms[v_i] for update skip locked) k
        where l.p is not null
        order by 2 desc, k.run_at, k.id
        limit v_rooms[v_i]
      )
      select v_aged_ids || coalesce(array_agg(r.id), '{}'), v_aged_queues || coalesce(array_agg(v_open[v_i]), '{}'),
             v_aged_rank || coalesce(array_agg(r.rank), '{}'), v_aged_run_at || coalesce(array_agg(r.run_at), '{}')
      into v_aged_ids, v_aged_queues, v_aged_rank, v_aged_run_at
      from ranked r;
    end loop;

    -- Each queue is picked on its own (LATERAL) so the pick is an index scan of jobs_ready_idx that stops
    -- after its room; `queue = any(...)` over the whole set read and sorted the entire backlog instead,
    -- at every claim. Flow keys in p_blocked are skipped.
    -- The pick goes into arrays, then one update leases it: so the statement that returns the jobs is the
    -- bare update, and only a claim a gate limited (a probe, a cap) pays for looking at what it leased.
    with polls as (
      select t.poll::integer as poll, t.lease_ms, t.worker,
             sum(t.lim) over (order by t.poll) - t.lim as lo, sum(t.lim) over (order by t.poll) as hi
      from unnest(p_limits, p_lease_ms, p_workers) with ordinality as t(lim, lease_ms, worker, poll)
    ), picked as (
      select c.id, c.queue, row_number() over (order by c.rank desc, c.run_at, c.id) as rank
      from (
        select k.id, o.name as queue, k.priority::float8 as rank, k.run_at
        from unnest(v_open, v_rooms, v_aging) as o(name, room, aging)
        cross join lateral (
          select j.id, j.priority, j.run_at from taskq.live_jobs j
          where j.state = 'queued' and j.queue = o.name
            and (j.expires_at is null or j.expires_at > v_now)
            and (j.flow_key is null or j.flow_key <> all(p_blocked))
          order by j.priority desc, j.run_at, j.id
          limit o.room
          for update skip locked
        ) k
        where o.aging is null
        union all
        select a.id, a.queue, a.rank, a.run_at
        from unnest(v_aged_ids, v_aged_queues, v_aged_rank, v_aged_run_at) as a(id, queue, rank, run_at)
      ) c
      order by c.rank desc, c.run_at, c.id
      limit v_total
    )
    select coalesce(array_agg(pk.id), '{}'), coalesce(array_agg(pk.queue), '{}'), coalesce(array_agg(p.poll), '{}'),
           coalesce(array_agg(p.lease_ms), '{}'), coalesce(array_agg(p.worker), '{}')
    into v_ids, v_queues, v_polls, v_leases, v_workers
    from picked pk join polls p on pk.rank > p.lo and pk.rank <= p.hi;
  end if;

  -- Part 3, the lease: the picked jobs run, each under its poll's lease and worker.
  if v_ctids is not null and cardinality(p_limits) = 1 then
    -- One poll of one queue, a worker's usual claim: every job it picked goes to that poll, and each is
    -- leased where the pick found and locked it, by its row version (a TID scan). The lock keeps the
    -- version current until this claim commits. Looking each job up again in the primary key instead
    -- costs Postgres more per claimed job.
    return query
    update taskq.live_jobs j set
      state = 'running',
      attempt = j.attempt + 1,
      started_at = v_now,
      lease_ms = p_lease_ms[1],
      lease_deadline = v_now + p_lease_ms[1] * interval '1 millisecond',
      worker_id = p_workers[1]
    where j.ctid = any(v_ctids)
    returning 1, j.id::text, j.queue, j.attempt, j.max_attempts,
              (extract(epoch from j.lease_deadline) * 1000)::float8, j.payload, j.content_type, j.priority,
              j.flow_key, (extract(epoch from j.enqueued_at) * 1000)::float8, j.headers, null::text, null::int;
  else
    return query
    update taskq.live_jobs j set
      state = 'running',
      attempt = j.attempt + 1,
      started_at = v_now,
      lease_ms = a.lease_ms,
      lease_deadline = v_now + a.lease_ms * interval '1 millisecond',
      worker_id = a.worker
    from unnest(v_ids, v_polls, v_leases, v_workers) as a(id, poll, lease_ms, worker)
    -- The id array lets the planner look each row up by primary key instead of joining every job.
    where j.id = any(v_ids) and j.id = a.id
    returning a.poll, j.id::text, j.queue, j.attempt, j.max_attempts,
              (extract(epoch from j.lease_deadline) * 1000)::float8, j.payload, j.content_type, j.priority,
              j.flow_key, (extract(epoch from j.enqueued_at) * 1000)::float8, j.headers, null::text, null::int;
  end if;

  -- Part 4, what the lease filled: a breaker's probe is recorded, and the polls left without a job of
  -- a queue whose last room this claim took are declined by the gate that left it.
  if cardinality(v_full) = 0 then
    return;
  end if;
  -- A probe queue's one job is its probe: the breaker is half-open while it runs. Without a probe the
  -- update could change nothing, and a capped queue's claim would look up each job it leased again.
  if cardinality(v_probes) > 0 then
    with probe as (
      update taskq.queues g set breaker_state = 'half_open', breaker_probe_job_id = j.id,
        breaker_probe_attempt = j.attempt
      from taskq.live_jobs j where j.id = any(v_ids) and g.name = j.queue and j.queue = any(v_probes)
      returning g.name
    )
    select coalesce(array_agg(name), '{}') into v_probes from probe;
    perform pg_notify('taskq_queues', x.name) from unnest(v_probes) as x(name);
  end if;
  -- This claim filled the room a gate left: the polls that got none of it are declined by that gate,
  -- as a poll after this claim would be.
  return query
  select d.*
  from unnest(v_full, v_full_rooms, v_full_gates, v_full_retry) as f(name, room, gate, retry)
  cross join generate_series(1, cardinality(p_limits)) as p(poll)
  cross join lateral taskq.claim_declined(f.name, f.gate, f.retry, p.poll) d
  where f.room <= (select count(*) from unnest(v_queues) as l(queue) where l.queue = f.name)
    and not exists (select 1 from unnest(v_queues, v_polls) as l(queue, poll) where l.poll = p.poll and l.queue = f.name);
end;
$$;
