-- The public view of a schedule (without the payload bytes), as the verbs return it and the audit
-- records it.
create or replace function taskq.schedule_settings(s taskq.schedules) returns jsonb language sql immutable as $$
  select jsonb_build_object(
    'name', s.name, 'cron', s.cron, 'time_zone', s.time_zone, 'queue', s.queue,
    'payload_bytes', octet_length(s.payload), 'content_type', s.content_type, 'priority', s.priority,
    'flow_key', s.flow_key, 'headers', s.headers, 'max_attempts', s.max_attempts,
    'ttl_seconds', s.ttl_seconds, 'missed_policy', s.missed_policy, 'smear_seconds', s.smear_seconds,
    'smear_offset_ms', s.smear_offset_ms, 'paused', s.paused, 'last_slot', s.last_slot,
    'created_at', s.created_at, 'updated_at', s.updated_at)
$$;
