-- taskq schema, baseline: every table, index and sequence of the first release, and the operator roles.
-- The functions, views and triggers are not here: each lives in its file in sql/, which every migrate
-- applies after the migrations. Append-only from here on: a change to the schema is the next number.

-- Live jobs: scheduled (waiting for run_at), queued (ready) and running (leased). A job that finishes
-- leaves this table for taskq.job_history in the statement that finishes it, so this table's size
-- follows the backlog and vacuum finds it small and often; finished rows that stay here a moment (a job
-- with an idempotency key, one a lease expiry, TTL or cancel finished) are moved at the next
-- maintenance tick (taskq.move_finished_jobs). taskq.jobs (sql/jobs.sql) is the view over both tables.
create table taskq.live_jobs (
  id bigint generated always as identity primary key,
  queue text not null,
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
  -- The last settled attempt and its kind ('success' | 'failure' | 'cancel' | 'release'), so a repeated
  -- settle answers the same without changing anything.
  settled_attempt integer,
  settled_kind text,
  outcome text,
  result bytea,
  last_error jsonb,
  idempotency_key text,
  -- A redriven job's attempt keeps counting (it is the fencing token); attempt_floor remembers where its
  -- current attempt budget started, so each redrive grants the job's budget again and never more.
  attempt_floor integer not null default 0
);

-- The claim: ready jobs of a queue, best priority first, then oldest.
create index jobs_ready_idx on taskq.live_jobs (queue, priority desc, run_at, id) where state = 'queued';
-- Queue health's backlog verdict: a queue's waiting jobs by age.
create index jobs_ready_age_idx on taskq.live_jobs (queue, run_at) where state = 'queued';
-- The promoter: scheduled jobs by due time.
create index jobs_scheduled_idx on taskq.live_jobs (run_at) where state = 'scheduled';
-- Running jobs, for max_running (a queue's count, by the leading column) and the lease rescue (expired
-- leases: running jobs are at most the fleet's job slots, so reading them all to sort is small). One
-- index, not one for each: a claim adds an entry to every index whose predicate its new row meets.
create index jobs_running_lease_idx on taskq.live_jobs (queue, lease_deadline) where state = 'running';
-- Finished jobs still in the live table, oldest first, for their move to the history.
create index jobs_finished_idx on taskq.live_jobs (finished_at) where state in ('succeeded', 'failed', 'cancelled');
-- The TTL expirer: waiting jobs with an expiry.
create index jobs_expiry_idx on taskq.live_jobs (expires_at) where expires_at is not null and state in ('scheduled', 'queued');
-- The redriver: failed jobs of a queue, oldest first.
create index jobs_failed_idx on taskq.live_jobs (queue, id) where state = 'failed';
create unique index jobs_idempotency_idx on taskq.live_jobs (queue, idempotency_key) where idempotency_key is not null;

-- Finished jobs (succeeded, failed, cancelled), partitioned by finished_at: one partition a UTC day,
-- made ahead by the maintenance leader (taskq.keep_job_history), so retention drops whole days, with no
-- row-by-row delete and nothing for vacuum to clean. The default partition takes a row no day covers.
create table taskq.job_history (like taskq.live_jobs including defaults) partition by range (finished_at);
alter table taskq.job_history add constraint job_history_state_check
  check (state in ('succeeded', 'failed', 'cancelled'));
create table taskq.job_history_default partition of taskq.job_history default;

-- Reads by id (GetJob, a settle sent again, cancel), a queue's finished jobs by time (counters,
-- activity), a queue's failed jobs (redrive, lists) and idempotency keys kept within retention.
create index job_history_id_idx on taskq.job_history (id);
create index job_history_queue_finished_idx on taskq.job_history (queue, finished_at);
create index job_history_failed_idx on taskq.job_history (queue, id) where state = 'failed';
create index job_history_idempotency_idx on taskq.job_history (queue, idempotency_key)
  where idempotency_key is not null;

-- The maintenance leader's retentionSeconds, so reads hide a finished job once it is past retention
-- even while its day's partition stays. No row: nothing hidden (no leader has run yet).
create table taskq.retention (
  singleton boolean primary key default true check (singleton),
  seconds integer not null check (seconds >= 0),
  updated_at timestamptz not null default now()
);

-- Each attempt of a job that did not succeed (a failure, a cancel, a release, a claim given back
-- undelivered, an expired lease), written by the statement that ends it, so "why isn't my job running?"
-- has an answer after a retry overwrote last_error. A success writes nothing: the current or succeeded
-- attempt is described from the job's own row. No foreign key to the jobs: its check would cost every
-- delete of a job, successes included; the statements that delete jobs take their attempts with them,
-- and the maintenance leader those of each day of history it drops. The primary key keeps a job's
-- attempts together, in order: GetJob reads them with one probe of it.
create table taskq.job_attempts (
  job_id bigint not null,
  -- The job's attempt number (its fencing token) this row describes.
  attempt integer not null,
  -- The worker that held the lease, as it named itself at claim.
  worker_id text,
  -- The instance id of the gateway that ended the attempt (for an expired lease, the maintenance
  -- leader's), when the statement that ended it was told.
  gateway text,
  claimed_at timestamptz,
  finished_at timestamptz not null,
  outcome text not null check (outcome in ('failed', 'cancelled', 'released', 'lease_expired')),
  -- {type, message, retryable} as the worker reported it (or the gateway, for an expired lease).
  error jsonb,
  -- How long the attempt ran: the duration its worker reported, else claimed_at to finished_at.
  duration_ms bigint,
  primary key (job_id, attempt)
);
create index job_attempts_finished_idx on taskq.job_attempts (finished_at);

-- One row per maintenance role; the holder renews before expires_at or loses it.
create table taskq.leaders (
  name text primary key,
  holder text not null,
  expires_at timestamptz not null
);

-- Queue settings, created by ensure_queue and the operator verbs (sql/). Every gate is off while its
-- setting is null.
create table taskq.queues (
  name text primary key,
  paused boolean not null default false,
  max_running integer,
  throttle_limit integer,
  throttle_period_ms integer,
  -- 'config' (from the gateway's config file: the API refuses to change it) or 'console' (the API).
  throttle_source text check (throttle_source in ('config', 'console')),
  claim_rate_per_minute integer,
  claim_burst integer,
  ramp_seconds integer,
  ramp_started_at timestamptz,
  priority_aging_seconds integer,
  default_ttl_seconds integer,
  notify_mode text not null default 'always' check (notify_mode in ('always', 'on_idle_transition')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- The circuit breaker, fleet-wide: its state is the queue's row, so every gateway sees one breaker. It
  -- is on while breaker_failure_threshold is set. Triggers: streak (always on with the breaker), rate
  -- and latency (each optional). States: closed -> open (a trigger fired, or a manual trip) ->
  -- half_open (the cooldown is over and one probe job was handed out) -> closed (enough probe
  -- successes; starts the ramp) or open again (the probe failed, or its lease expired).
  breaker_failure_threshold integer,
  breaker_cooldown_seconds integer,
  breaker_half_open_successes integer,
  breaker_rate_failure_ratio double precision,
  breaker_rate_window_seconds integer,
  breaker_rate_min_volume integer,
  breaker_latency_threshold_ms integer,
  breaker_latency_window_seconds integer,
  breaker_latency_min_volume integer,
  breaker_state text not null default 'closed' check (breaker_state in ('closed', 'open', 'half_open')),
  breaker_failure_streak integer not null default 0,
  breaker_opened_total integer not null default 0,
  breaker_tripped_at timestamptz,
  breaker_probe_job_id bigint,
  breaker_probe_attempt integer,
  breaker_probe_successes integer not null default 0,
  -- Taken from taskq.throttle_versions by every change of the throttle, removal included
  -- (taskq.bump_throttle_version): the limiter compares it with the version its slot was taken under,
  -- so a change drops the old slot at the next claim, on every gateway.
  throttle_version bigint
);
create sequence taskq.throttle_versions;

-- Every queue the system knows, which every list of queues reads (queue ls, health, counters, the
-- console, psql's queue_flow). A name is added by the first enqueue into the queue (jobs_enqueue,
-- fire_schedule), by add_queue (every settings row) and by a gateway for the queues its config file
-- defines; none is ever removed, so a queue stays listed once its jobs are gone. A table of its own
-- rather than a settings row made on enqueue: a claim locks a queue's settings row (jobs_claim), and a
-- queue without settings has none to lock.
create table taskq.known_queues (
  name text primary key,
  created_at timestamptz not null default now()
);

-- Key-level claim rates, across queues. Keys without a row are unlimited.
create table taskq.flow_limits (
  flow_key text primary key,
  rate_per_minute integer not null,
  burst integer not null,
  updated_at timestamptz not null default now()
);

-- Append-only operator audit. Flow-limit changes are recorded under "flow:<key>", schedules under
-- "schedule:<name>" (queue names cannot contain ':').
create table taskq.queue_audit (
  id bigint generated always as identity primary key,
  queue text not null,
  event_type text not null,
  actor text not null,
  detail jsonb not null,
  created_at timestamptz not null default now()
);
create index queue_audit_queue_idx on taskq.queue_audit (queue, id desc);
create index queue_audit_created_idx on taskq.queue_audit (created_at);

-- Which gateway config owns the fleet's config throttles: instances may run different files (a rolling
-- deploy, one started by hand), and the newest config version wins (taskq.apply_config_throttles), so an
-- older or disagreeing file never rewrites the fleet.
create table taskq.config_owner (
  id boolean primary key default true check (id),
  version bigint not null,
  -- Of the config's queues section, so two files with one version but different throttles disagree.
  digest text not null,
  updated_at timestamptz not null default now()
);

-- Throttled verdicts per queue, reason and minute, fleet-wide: each gateway tallies the verdicts it
-- answers and adds them here every few seconds in one upsert, so queue_counters (and the console) show
-- what every instance declined, not what one instance saw. Only the last hour is read; the maintenance
-- tick deletes minutes older than two hours, which bounds the table.
create table taskq.queue_throttled (
  queue text not null,
  minute timestamptz not null,
  reason text not null,
  count bigint not null,
  primary key (queue, minute, reason)
);

-- One row per settle of a queue whose breaker has a rate or latency trigger, for the rolling windows.
-- The maintenance tick prunes rows older than the queue's largest window.
create table taskq.breaker_samples (
  queue text not null,
  at timestamptz not null,
  failed boolean not null,
  latency_ms integer not null
);
create index breaker_samples_queue_at_idx on taskq.breaker_samples (queue, at);

-- Events on a job: the breaker's transitions (breaker_opened, breaker_reopened, breaker_half_open,
-- breaker_closed) are recorded on the job whose claim, settle or lost lease caused them.
create table taskq.job_events (
  id bigint generated always as identity primary key,
  job_id bigint not null,
  event_type text not null,
  data jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index job_events_job_idx on taskq.job_events (job_id);
-- Breaker events by queue, newest first.
create index job_events_breaker_idx on taskq.job_events ((data ->> 'queue'), created_at desc)
where event_type like 'breaker\_%';

-- A schedule enqueues a copy of its job template once per cron slot. The maintenance leader plans the
-- slots (cron parsing lives in the gateway) and calls taskq.fire_schedule for each due one; that
-- function claims the slot (unique (schedule_id, slot), and slot > last_slot) and inserts the job in
-- one transaction, so a slot fires at most once whatever the number of gateways and restarts.
create table taskq.schedules (
  id bigint generated always as identity primary key,
  name text not null unique,
  -- 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first.
  cron text not null,
  -- An IANA time zone name the cron is read in ('UTC' by default).
  time_zone text not null default 'UTC',
  -- The job template.
  queue text not null,
  payload bytea not null default '',
  content_type text not null default '',
  priority smallint not null default 0,
  flow_key text,
  headers jsonb not null default '{}',
  -- null: the gateway's default.
  max_attempts integer,
  -- null: the queue's default_ttl_seconds (if any).
  ttl_seconds integer,
  -- Slots missed while no gateway ran (older than the scheduler's grace): 'skip' drops them,
  -- 'fire_once' fires the latest of them once.
  missed_policy text not null default 'skip' check (missed_policy in ('skip', 'fire_once')),
  smear_seconds integer not null default 0,
  -- The schedule's firing offset in [0, smear): a hash of its name, so the same on every gateway and
  -- after every restart, and different between co-scheduled entries.
  smear_offset_ms bigint generated always as (
    case when smear_seconds > 0
      then ('x' || substr(md5(name), 1, 12))::bit(48)::bigint % (smear_seconds::bigint * 1000)
      else 0 end) stored,
  paused boolean not null default false,
  -- Every slot at or before this is done (fired, skipped, or before the schedule existed).
  last_slot timestamptz not null default now(),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- One row per fired slot: the unique key that makes a slot fire at most once.
create table taskq.schedule_fires (
  schedule_id bigint not null references taskq.schedules (id) on delete cascade,
  slot timestamptz not null,
  job_id bigint not null,
  fired_at timestamptz not null default now(),
  primary key (schedule_id, slot)
);
create index schedule_fires_fired_idx on taskq.schedule_fires (fired_at);

-- The workers connected to the fleet, one row per worker and gateway. Each gateway keeps a summary of
-- its open Claim streams in memory (a poll costs a map update, no write) and writes it here in one
-- statement every few seconds (taskq.workers_flush): its rows are replaced by what it holds now, so a
-- worker whose stream closed is gone at the gateway's next flush. A row carries when it lapses
-- (expires_at, a few flushes ahead): a gateway that stops flushing (it died) leaves rows that every
-- reader ignores from then on and the next flush of any gateway prunes.
create table taskq.workers (
  gateway_id text not null,
  -- The poll's worker_id ('' when the worker sent none).
  worker_id text not null,
  -- The queues its polls named.
  queues text[] not null,
  -- Its Claim streams open on this gateway (an SDK worker holds one).
  streams integer not null,
  -- Jobs its poll asks for now: its free slots plus the room in its prefetch buffer; 0 while it has no
  -- poll out (busy). With the jobs it holds, what it can hold at once.
  max_jobs integer not null,
  -- What the worker said of itself in its polls, when it did: job slots and prefetch buffer.
  concurrency integer,
  prefetch integer,
  last_poll_at timestamptz not null,
  -- Throttled verdicts this gateway answered it in the minute before refreshed_at, by reason.
  verdicts jsonb not null default '{}',
  refreshed_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (gateway_id, worker_id)
);
create index workers_expires_idx on taskq.workers (expires_at);

-- The roles operators connect with from psql (what each may run: sql/grants.sql). Roles are
-- cluster-wide: created once, idempotently, so a second database on the same server finds them. A
-- migrating user without CREATEROLE skips the roles it can't create (with a notice) instead of failing
-- the migration; a DBA can create them later, and the next migrate grants them.
do $$
declare
  r text;
begin
  foreach r in array array['taskq_operator', 'taskq_observer', 'taskq_housekeeper'] loop
    begin
      execute format('create role %I nologin', r);
    exception
      when duplicate_object or unique_violation then null;
      when insufficient_privilege then raise notice 'taskq: cannot create role % (no CREATEROLE); skipped', r;
    end;
  end loop;
end $$;
