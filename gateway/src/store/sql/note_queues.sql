-- note_queues(names): records queue names in taskq.known_queues, which every list of queues reads. For
-- the gateway's config file, which defines queues before anything is enqueued into them; the enqueue
-- path adds its names in its own statement (jobs_enqueue, fire_schedule).
create or replace function taskq.note_queues(p_names text[]) returns void language plpgsql as $$
begin
  perform taskq.check_queue_name(n) from unnest(p_names) n;
  insert into taskq.known_queues (name) select distinct n from unnest(p_names) n on conflict do nothing;
end $$;
