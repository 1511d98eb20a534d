-- The role an application's own database user is granted to enqueue jobs in its own transactions
-- (taskq.enqueue, taskq.enqueue_batch; what it may run: sql/grants.sql). Created as 0001_baseline.sql
-- creates the operator roles: once per cluster, idempotently, and skipped with a notice by a migrating
-- user without CREATEROLE (a DBA can create it later; the next migrate grants it).
do $$
begin
  create role taskq_producer nologin;
exception
  when duplicate_object or unique_violation then null;
  when insufficient_privilege then raise notice 'taskq: cannot create role taskq_producer (no CREATEROLE); skipped';
end $$;
