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
