-- taskq schema, version 22: each attempt of a job that did not succeed is kept in taskq.job_attempts, so
-- "why isn't my job running?" has an answer after a retry overwrote last_error.
--
-- A row is written by the statement that ends the attempt, and only when it does not succeed: a failure,
-- a cancel or a release settled by its worker (taskq.jobs_settle), a claim given back undelivered
-- (JobsRelease), a lease expired (LeasesRescue). The success path writes nothing here; the current or
-- succeeded attempt is described from the job's own row (GetJob adds it after the stored ones).
--
-- No foreign key to taskq.jobs: its check would cost every delete of a job, successes included. The
-- attempts go with their job in the statements that delete jobs instead (a settle that deletes a finished
-- job when retentionSeconds is 0, clear_queue), and the maintenance leader deletes those whose job's day
-- of history it dropped (taskq.keep_job_history, by finished_at). The primary key puts a job's attempts
-- together, in order: GetJob reads them with one probe of it.
create table taskq.job_attempts (
  job_id bigint not null,
  -- The job's attempt number (its fencing token) this row describes.
  attempt integer not null,
  -- The worker that held the lease, as it named itself at claim.
  worker_id text,
  -- The instance id of the gateway that ended the attempt, when known. None of the statements that end
  -- attempts is told it yet (a settle would need it as an argument), so it is null for now.
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
