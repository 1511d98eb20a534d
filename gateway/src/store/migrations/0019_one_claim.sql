-- taskq schema, version 19: one claim statement for every queue.
--
-- Until now a queue a gate applied to was claimed by taskq.claim_queue and every other queue by
-- taskq.jobs_claim, two copies of the pick and lease, with the gated column choosing between them.
-- taskq.jobs_claim (sql/jobs_claim.sql) now decides pause, breaker and max_running under each queue's
-- row lock itself and answers declines as verdict rows, so the older function and the column go, and
-- jobs_claim, whose result gains the verdict columns, is created anew.

drop function taskq.claim_queue(text, integer, integer, text, timestamptz, integer, integer, text[]);
drop function taskq.jobs_claim(text[], integer[], integer[], text[], timestamptz, text[]);
alter table taskq.queues drop column gated;
