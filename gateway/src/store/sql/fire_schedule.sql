-- A schedule enqueues a copy of its job template once per cron slot. The maintenance leader plans the
-- slots (cron parsing lives in the gateway) and calls fire_schedule for each due one; it claims the
-- slot (unique (schedule_id, slot), and slot > last_slot) and inserts the job in one transaction, so a
-- slot fires at most once whatever the number of gateways and restarts.
--
-- Fires one slot of a schedule: claims (schedule, slot) and enqueues the template with run_at =
-- p_run_at (slot + smear offset) in one transaction. Returns the job id, or null when the slot was
-- already fired or passed over (slot <= last_slot), or the schedule is paused or gone. Internal to
-- the gateway's scheduler: not granted to any operator role.
create or replace function taskq.fire_schedule(p_schedule_id bigint, p_slot timestamptz, p_run_at timestamptz,
                                               p_default_max_attempts integer, p_now timestamptz)
returns text language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
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
  insert into taskq.live_jobs (queue, state, priority, flow_key, payload, content_type, headers, max_attempts, run_at,
                          enqueued_at, expires_at)
  values (s.queue, case when p_run_at > v_now then 'scheduled' else 'queued' end, s.priority, s.flow_key,
          s.payload, s.content_type,
          s.headers || jsonb_build_object('taskq-schedule', s.name, 'taskq-schedule-slot',
                                          to_char(p_slot at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
          coalesce(s.max_attempts, p_default_max_attempts), p_run_at, v_now,
          case when v_ttl > 0 then greatest(p_run_at, v_now) + v_ttl * interval '1 second' end)
  returning id into v_job;
  insert into taskq.known_queues (name) values (s.queue) on conflict do nothing;
  update taskq.schedule_fires set job_id = v_job where schedule_id = s.id and slot = p_slot;
  update taskq.schedules set last_slot = p_slot where id = s.id;
  if p_run_at <= v_now then perform pg_notify('taskq_jobs', s.queue); end if;
  return v_job::text;
end $$;
