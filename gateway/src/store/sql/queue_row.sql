-- queue_row(name): the queue's settings row, or for a known queue without one (only enqueued to) the
-- row add_queue would create: every gate off. The defaults restate the table's not-null column defaults
-- (0001_baseline.sql), as the queue_flow view does; the gateway's lists read settings through it,
-- so a queue without settings lists the same as one whose settings are all cleared.
create or replace function taskq.queue_row(p_name text) returns taskq.queues language sql stable as $$
  select coalesce((select q from taskq.queues q where q.name = p_name),
    jsonb_populate_record(null::taskq.queues, jsonb_build_object('name', p_name, 'paused', false,
      'notify_mode', 'always', 'breaker_state', 'closed', 'breaker_failure_streak', 0,
      'breaker_opened_total', 0, 'breaker_probe_successes', 0)))
$$;
