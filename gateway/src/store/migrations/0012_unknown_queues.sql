-- taskq schema, version 12: an operator verb on a queue name never seen (no settings, no jobs, no
-- schedule feeding it) answers not found, naming it, instead of creating the queue, so a typo
-- (pause_queue('mial', ...)) no longer makes a new one. ensure_queue is the verb that creates a queue
-- (the gateway calls it for the queues its config file defines).
-- A queue with jobs or a schedule but no settings yet is known: its row is created as before.

-- Raises no_data_found (P0002) naming the queue unless it has settings, jobs or a schedule. The jobs
-- probe may scan: it runs only while the name has no settings row, and the first verb creates the row.
create function taskq.require_known_queue(p_name text) returns void language plpgsql as $$
begin
  perform taskq.check_queue_name(p_name);
  if not exists (select 1 from taskq.queues where name = p_name)
     and not exists (select 1 from taskq.jobs where queue = p_name)
     and not exists (select 1 from taskq.schedules where queue = p_name) then
    raise exception using errcode = 'P0002',
      message = 'queue ' || p_name || ' not found (no jobs, no settings): ensure_queue creates it';
  end if;
end $$;

-- Creates the queue's row if needed (every gate off) and locks it: only for the verbs that create.
create function taskq.add_queue(p_name text) returns taskq.queues language plpgsql as $$
declare
  q taskq.queues;
begin
  perform taskq.check_queue_name(p_name);
  insert into taskq.queues (name) values (p_name) on conflict (name) do nothing;
  select * into q from taskq.queues where name = p_name for update;
  return q;
end $$;

-- Locks a known queue's row (creating it for a queue with jobs but no settings yet); not found otherwise.
create or replace function taskq.lock_queue(p_name text) returns taskq.queues language plpgsql as $$
begin
  perform taskq.require_known_queue(p_name);
  return taskq.add_queue(p_name);
end $$;

-- ensure_queue(name, profile jsonb, actor): creates the queue if needed, then sets the profile keys.
create or replace function taskq.ensure_queue(p_name text, p_profile jsonb, p_actor text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  perform taskq.add_queue(p_name);
  return taskq.update_profile(p_name, p_profile, p_actor, 'queue.ensure');
end $$;

-- As in version 7, except that a queue never seen is not found (and gets no audit row).
create or replace function taskq.redrive_failed(p_queue text, p_limit integer, p_actor text, p_smear_seconds integer)
returns bigint language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
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
  perform taskq.require_known_queue(p_queue);
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
