-- Creates the queue if needed and sets the profile keys given (a null value turns that setting off);
-- keys not given keep their value. Audited as p_event. Returns the settings. While the queue has an
-- adaptive limit, max_running sets the cap kept aside for when it is turned off (as set_queue_concurrency).
create or replace function taskq.update_profile(p_name text, p_profile jsonb, p_actor text, p_event text) returns jsonb
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
  update taskq.queues set
    max_running = case when q.adaptive_min is null then q.max_running else max_running end,
    adaptive_fixed_max_running = case when q.adaptive_min is not null and p ? 'max_running' then q.max_running
      else adaptive_fixed_max_running end,
    claim_rate_per_minute = q.claim_rate_per_minute,
    claim_burst = q.claim_burst, ramp_seconds = q.ramp_seconds, priority_aging_seconds = q.priority_aging_seconds,
    default_ttl_seconds = q.default_ttl_seconds, notify_mode = q.notify_mode, updated_at = now()
  where name = p_name returning * into q;
  perform taskq.audit(p_name, p_event, p_actor, before, taskq.queue_settings(q));
  return taskq.queue_settings(q);
end $$;
