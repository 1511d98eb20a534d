-- taskq schema, version 20: every queue the system knows has a name in taskq.known_queues, and every list
-- of queues reads it (queue ls, queue health, queue counters, the console, psql's queue_flow).
--
-- Until now a queue was listed by whichever of three places a list looked in: a settings row in
-- taskq.queues (created by ensure_queue and the operator verbs), waiting or running jobs, or jobs finished
-- in the last hour. A queue only enqueued to had no settings row, so `queue ls` left it out, and a queue
-- whose jobs had all finished dropped out of `queue health` but not of `queue counters`.
--
-- A name is added by the first enqueue into the queue (jobs_enqueue, fire_schedule), by add_queue (every
-- settings row), and by a gateway for the queues its config file defines; none is ever removed, so a queue
-- stays listed once its jobs are gone. It is a table of its own rather than a settings row made on
-- enqueue: a claim locks a queue's settings row (jobs_claim), and a queue without settings has none to lock.
create table taskq.known_queues (
  name text primary key,
  created_at timestamptz not null default now()
);

insert into taskq.known_queues (name)
select name from taskq.queues
union
select distinct queue from taskq.jobs
on conflict do nothing;
