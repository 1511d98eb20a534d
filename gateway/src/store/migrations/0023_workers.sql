-- taskq schema, version 23: the workers connected to the fleet, one row per worker and gateway.
--
-- Each gateway keeps a summary of its open Claim streams in memory (a poll costs a map update, no
-- write) and writes it here in one statement every few seconds (taskq.workers_flush): its rows are
-- replaced by what it holds now, so a worker whose stream closed is gone at the gateway's next flush.
-- A row carries when it lapses (expires_at, a few flushes ahead): a gateway that stops flushing (it
-- died) leaves rows that every reader ignores from then on and the next flush of any gateway prunes.
-- taskq.list_workers reads them for `taskq worker ls`; explain reads them for "no worker has polled
-- this queue".
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
