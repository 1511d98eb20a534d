-- Adaptive max_running (taskq.set_adaptive_concurrency, taskq.adapt_concurrency): the controller moves
-- the queue's max_running between adaptive_min and adaptive_max from its settles, as an operator would,
-- so the claim path (taskq.jobs_claim) and every gateway's cached settings read the one column they
-- always did. The operator's own cap waits in adaptive_fixed_max_running, and comes back when adaptive
-- is turned off. Every adaptive_* column is null while the queue's adaptive limit is off.
alter table taskq.queues
  add column adaptive_min integer,
  add column adaptive_max integer,
  add column adaptive_target_latency_ms integer,
  add column adaptive_fixed_max_running integer,
  -- Growth by a factor per decision (after turning on, or a restart after a breaker close) until the
  -- first decrease; additive growth after it.
  add column adaptive_slow_start boolean,
  -- The last decision (a change or a hold) and why, as explain and queue_health show it.
  add column adaptive_decided_at timestamptz,
  add column adaptive_reason text;

-- What the queue's settles since the controller's last decision say, one row per queue per settle batch
-- (taskq.jobs_settle), written only for queues with an adaptive limit; each decision takes (deletes)
-- the rows it reads.
create table taskq.adaptive_samples (
  queue text not null,
  at timestamptz not null,
  settles integer not null,
  failures integer not null,
  latency_ms_sum bigint not null
);
create index adaptive_samples_queue_at_idx on taskq.adaptive_samples (queue, at);

-- Every change of an adaptive queue's effective limit (max_running), with why: the controller's steps,
-- a restart after a breaker close, the operator turning it on, changing or off. The newest 1,000 per
-- queue are kept (taskq.adaptive_note).
create table taskq.adaptive_changes (
  id bigint generated always as identity primary key,
  queue text not null,
  at timestamptz not null,
  limit_before integer,
  -- null: adaptive turned off and the queue left without a cap.
  limit_after integer,
  reason text not null,
  figures jsonb not null default '{}'
);
create index adaptive_changes_queue_idx on taskq.adaptive_changes (queue, id desc);
