-- taskq.jobs_settle_claim applied a poll's settlements and claimed for it in one statement. With
-- workers holding jobs ahead, a poll carries hundreds of jobs' settlements and comes seldom, so the
-- statement it saved no longer showed in throughput or latency: a poll's settlements are now applied by
-- taskq.jobs_settle before it claims.
drop function if exists taskq.jobs_settle_claim(bigint[], integer[], text[], bytea[], jsonb[], integer[],
  timestamptz, integer[], boolean, text[], integer[], integer[], text[], text[], text);
