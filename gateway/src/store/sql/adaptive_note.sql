-- adaptive_note(queue, before, after, reason, figures, at): records a change of an adaptive queue's
-- effective limit in taskq.adaptive_changes and keeps the newest 1,000 of the queue's rows, so the
-- history stays bounded whatever the controller does.
create or replace function taskq.adaptive_note(p_queue text, p_before integer, p_after integer, p_reason text,
                                               p_figures jsonb, p_at timestamptz) returns void
language plpgsql as $$
begin
  insert into taskq.adaptive_changes (queue, at, limit_before, limit_after, reason, figures)
  values (p_queue, p_at, p_before, p_after, p_reason, coalesce(p_figures, '{}'));
  delete from taskq.adaptive_changes c where c.queue = p_queue and c.id <= (
    select k.id from taskq.adaptive_changes k where k.queue = p_queue order by k.id desc offset 1000 limit 1);
end $$;
