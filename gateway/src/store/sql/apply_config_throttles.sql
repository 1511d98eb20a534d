-- Every gateway applies its config file's throttles at start. Instances may run different files (a
-- rolling deploy, one started by hand): the newest config version owns the config throttles
-- (taskq.config_owner), so an older or disagreeing file never rewrites the fleet. Its instance is
-- told, and says so.
--
-- apply_config_throttles(version, digest, throttles {"<queue>": {"limit", "period_ms"}}, actor): applies
-- a config's throttles (source 'config') and removes config throttles it no longer defines, when its
-- version is newer than the owner's, or the same with the same digest. Otherwise changes nothing.
-- Returns {applied, version, digest} with the owner's version and digest afterwards.
create or replace function taskq.apply_config_throttles(p_version bigint, p_digest text, p_throttles jsonb, p_actor text)
returns jsonb language plpgsql as $$
declare
  o taskq.config_owner;
  q record;
begin
  insert into taskq.config_owner (version, digest) values (-1, '') on conflict (id) do nothing;
  select * into o from taskq.config_owner for update;
  if o.version > p_version or (o.version = p_version and o.digest <> p_digest) then
    return jsonb_build_object('applied', false, 'version', o.version, 'digest', o.digest);
  end if;
  for q in select t.key as name, (t.value ->> 'limit')::int as lim, (t.value ->> 'period_ms')::int as period
           from jsonb_each(p_throttles) t loop
    if not exists (select 1 from taskq.queues x where x.name = q.name and x.throttle_source = 'config'
                   and x.throttle_limit = q.lim and x.throttle_period_ms = q.period) then
      -- The config file defines the queue: create it if needed (other verbs refuse a queue never seen).
      if not exists (select 1 from taskq.queues x where x.name = q.name) then
        perform taskq.ensure_queue(q.name, '{}'::jsonb, p_actor);
      end if;
      perform taskq.set_queue_throttle(q.name, q.lim, q.period, p_actor, 'config');
    end if;
  end loop;
  for q in select x.name from taskq.queues x where x.throttle_source = 'config' and not p_throttles ? x.name loop
    perform taskq.delete_queue_throttle(q.name, p_actor, 'config');
  end loop;
  update taskq.config_owner set version = p_version, digest = p_digest, updated_at = now();
  return jsonb_build_object('applied', true, 'version', p_version, 'digest', p_digest);
end $$;
