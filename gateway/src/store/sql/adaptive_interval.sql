-- adaptive_interval(target_ms, slow_start): how long the adaptive controller waits between two
-- decisions for one queue, so each decision sees the settles of the jobs the one before it started.
-- Steady, the target itself, at least 1 s (enough settles to judge by) and at most a minute (a
-- queue of hour-long jobs still decides). In slow start, twice the target, at least 250 ms, at most
-- the steady interval: the limit is still under what the downstream takes, so a job started after a
-- step settles within the target, and from min the limit reaches its level in half the time.
create or replace function taskq.adaptive_interval(p_target_ms integer, p_slow_start boolean)
returns interval language sql immutable as $$
  select case when p_slow_start
    then least(greatest(250, 2 * p_target_ms), least(60000, greatest(1000, p_target_ms)))
    else least(60000, greatest(1000, p_target_ms)) end * interval '1 millisecond'
$$;

-- adaptive_unread(target_ms, slow_start): the first part of an interval, whose settles a decision
-- takes but does not read: the target, at most half the interval. They are mostly of jobs started
-- before the last step, and would hide what it did. (Read, they let slow start step past the
-- downstream's level: 38 -> 48 -> 60 in flight where 40 was the most it took, as 200 ms jobs settled
-- at the old level.)
create or replace function taskq.adaptive_unread(p_target_ms integer, p_slow_start boolean)
returns interval language sql immutable as $$
  select least(p_target_ms * interval '1 millisecond', taskq.adaptive_interval(p_target_ms, p_slow_start) / 2)
$$;

-- adaptive_due(queue, now): whether taskq.adapt_concurrency decides this adaptive queue now: its
-- interval has passed since its last decision or, sooner, the settles it would read hold a failure
-- burst (at least 3 failures and 5% of the settles): the law's loudest signal, which a whole interval's
-- wait lets multiply (a downstream whose capacity halved failed 70 jobs in the second before the
-- decision that backed off).
create or replace function taskq.adaptive_due(q taskq.queues, p_now timestamptz) returns boolean
language sql stable as $$
  select q.adaptive_min is not null and (q.adaptive_decided_at is null
    or p_now >= q.adaptive_decided_at + taskq.adaptive_interval(q.adaptive_target_latency_ms, q.adaptive_slow_start)
    or coalesce((
      select sum(a.failures) >= 3 and sum(a.failures) >= 0.05 * sum(a.settles)
      from taskq.adaptive_samples a
      where a.queue = q.name and a.at <= p_now
        and a.at > q.adaptive_decided_at + taskq.adaptive_unread(q.adaptive_target_latency_ms, q.adaptive_slow_start)
    ), false))
$$;
