-- list_queue_audit(queue, limit, before_id): the queue's audit rows, newest first; with before_id only
-- rows with an id below it (the next page). limit defaults to 50, 1 to 1000.
create or replace function taskq.list_queue_audit(p_queue text, p_limit integer default null, p_before_id bigint default null)
returns table (id bigint, event_type text, actor text, detail jsonb, created_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  if p_queue is null or length(p_queue) = 0 or length(p_queue) > 300 then
    perform taskq.invalid('queue', 'must be a queue name (or flow:<key>)');
  end if;
  perform taskq.check_int('limit', p_limit, 1, 1000);
  return query
  select a.id, a.event_type, a.actor, a.detail, a.created_at from taskq.queue_audit a
  where a.queue = p_queue and (p_before_id is null or a.id < p_before_id)
  order by a.id desc
  limit coalesce(p_limit, 50);
end $$;
