-- Sets the throttle {limit, period_ms}. A config-sourced throttle can only be changed by the config
-- (p_source = 'config', used by the gateway at start-up); the API gets 'object_not_in_prerequisite_state'.
create or replace function taskq.set_queue_throttle(p_name text, p_limit integer, p_period_ms integer, p_actor text,
                                                    p_source text default 'console') returns jsonb
language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
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
