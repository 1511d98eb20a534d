-- Appends a queue verb's audit row (settings before and after) and tells every gateway the queue changed
-- (taskq_queues). Each verb validates, changes, audits and notifies in one transaction: a verb that
-- fails writes nothing.
create or replace function taskq.audit(p_queue text, p_event text, p_actor text, p_before jsonb, p_after jsonb)
returns void language sql as $$
  insert into taskq.queue_audit (queue, event_type, actor, detail)
  values (p_queue, p_event, p_actor, jsonb_build_object('before', p_before, 'after', p_after));
  select pg_notify('taskq_queues', p_queue);
$$;
