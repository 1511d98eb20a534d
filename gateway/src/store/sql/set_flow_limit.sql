-- set_flow_limit(key, rate_per_minute, burst, actor): meters claims of jobs carrying that flow key
-- across all queues. A null rate removes the limit (the key becomes unlimited again).
create or replace function taskq.set_flow_limit(p_key text, p_rate_per_minute integer, p_burst integer, p_actor text)
returns jsonb language plpgsql security definer set search_path = pg_catalog, taskq, pg_temp as $$
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
