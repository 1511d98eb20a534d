-- A schedule verb's audit row, filed under "schedule:<name>" (queue names cannot contain ':').
create or replace function taskq.schedule_audit(p_name text, p_event text, p_actor text, p_before jsonb, p_after jsonb)
returns void language sql as $$
  insert into taskq.queue_audit (queue, event_type, actor, detail)
  values ('schedule:' || p_name, p_event, p_actor, jsonb_build_object('before', p_before, 'after', p_after));
$$;
