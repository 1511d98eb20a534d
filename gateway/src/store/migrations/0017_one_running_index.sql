-- One index of running jobs instead of two. A claim makes its job 'running', and Postgres adds an entry
-- to every index whose predicate the new row version meets: jobs_lease_idx (lease_deadline) and
-- jobs_running_idx (queue) were two entries per claimed job for the same set of rows. One index on
-- (queue, lease_deadline) serves both readers: max_running counts a queue's running jobs by its
-- leading column, and the lease rescue reads expired leases from it (running jobs are at most the
-- fleet's job slots, so reading them all to sort by deadline is small).
create index jobs_running_lease_idx on taskq.jobs (queue, lease_deadline) where state = 'running';
drop index taskq.jobs_lease_idx;
drop index taskq.jobs_running_idx;
