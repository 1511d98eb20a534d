-- Removes the throttle. A config-sourced one only the config removes (p_source = 'config'), as with
-- set_queue_throttle.
create or replace function taskq.delete_queue_throttle(p_name text, p_actor text, p_source text default 'console')
returns jsonb language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
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
