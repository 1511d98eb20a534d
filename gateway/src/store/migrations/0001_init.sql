-- taskq schema, version 1: jobs, leader leases.
-- Forward-only: never edit a migration that has shipped; add the next number instead.

create table taskq.jobs (
  id bigint generated always as identity primary key,
  queue text not null,
  -- scheduled: waiting for run_at; queued: ready; running: leased; then one of the finished states.
  state text not null check (state in ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled')),
  priority smallint not null default 0,
  flow_key text,
  payload bytea not null,
  content_type text not null default '',
  headers jsonb not null default '{}',
  -- attempt is the fencing token: incremented by each claim, carried by every settle and heartbeat.
  attempt integer not null default 0,
  max_attempts integer not null,
  run_at timestamptz not null,
  enqueued_at timestamptz not null,
  expires_at timestamptz,
  lease_ms integer,
  lease_deadline timestamptz,
  worker_id text,
  started_at timestamptz,
  finished_at timestamptz,
  cancel_requested boolean not null default false,
  -- The last settled attempt and its kind ('success' | 'failure' | 'cancel'), so a repeated settle
  -- answers the same without changing anything.
  settled_attempt integer,
  settled_kind text,
  outcome text,
  result bytea,
  last_error jsonb,
  idempotency_key text
);

-- The claim path: ready jobs of a queue, best priority first, then oldest.
create index jobs_ready_idx on taskq.jobs (queue, priority desc, run_at, id) where state = 'queued';
-- The promoter: scheduled jobs by due time.
create index jobs_scheduled_idx on taskq.jobs (run_at) where state = 'scheduled';
-- The lease rescuer: running jobs by lease deadline.
create index jobs_lease_idx on taskq.jobs (lease_deadline) where state = 'running';
-- The retention cleaner: finished jobs by finish time.
create index jobs_finished_idx on taskq.jobs (finished_at) where state in ('succeeded', 'failed', 'cancelled');
-- The TTL expirer: waiting jobs with an expiry.
create index jobs_expiry_idx on taskq.jobs (expires_at) where expires_at is not null and state in ('scheduled', 'queued');
create unique index jobs_idempotency_idx on taskq.jobs (queue, idempotency_key) where idempotency_key is not null;

-- One row per maintenance role; the holder renews before expires_at or loses it.
create table taskq.leaders (
  name text primary key,
  holder text not null,
  expires_at timestamptz not null
);
