-- list_adaptive_changes(queue, limit): the changes of the queue's adaptive limit, newest first (the
-- console's chart, `taskq queue adaptive-history`). limit defaults to 100, 1 to 1,000.
create or replace function taskq.list_adaptive_changes(p_queue text, p_limit integer default null)
returns table (id bigint, at timestamptz, limit_before integer, limit_after integer, reason text, figures jsonb)
language plpgsql stable security definer set search_path = pg_catalog, taskq, pg_temp as $$
begin
  perform taskq.check_queue_name(p_queue);
  perform taskq.check_int('limit', p_limit, 1, 1000);
  return query
  select c.id, c.at, c.limit_before, c.limit_after, c.reason, c.figures from taskq.adaptive_changes c
  where c.queue = p_queue order by c.id desc limit coalesce(p_limit, 100);
end $$;
