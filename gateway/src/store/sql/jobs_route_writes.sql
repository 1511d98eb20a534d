-- Writes through the view taskq.jobs go to its tables: see taskq.route_job_write.
create or replace trigger jobs_route_writes instead of insert or update or delete on taskq.jobs
for each row execute function taskq.route_job_write();
