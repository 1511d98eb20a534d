import type { ClaimedJob } from "../store/types.js";

/**
 * The most bytes of jobs one claim answer carries: gRPC clients refuse a message past 4 MiB unless told
 * otherwise (grpc-go, grpcio and grpc-js alike), and a refused answer would fail the poll, put its jobs
 * back, and be claimed and refused again on the next. Jobs past this go back at once; a single job
 * larger than it still goes out alone (its payload is within the gateway's maxPayloadBytes).
 */
export const MAX_ANSWER_JOB_BYTES = 4 * 1024 * 1024 - 64 * 1024;

/** A job's size on the wire, over-estimated: its variable fields, and a bound for the fixed ones. */
function jobBytes(j: ClaimedJob): number {
  let n = 96 + j.payload.length + j.id.length + 3 * (j.queue.length + j.contentType.length);
  if (j.flowKey !== null) n += 3 * j.flowKey.length;
  for (const k in j.headers) n += 16 + 3 * (k.length + (j.headers[k]?.length ?? 0));
  return n;
}

/** How many of the jobs, in claim order, fit one answer: at least the first. No copy on the hot path. */
export function jobsThatFit(jobs: readonly ClaimedJob[], budget = MAX_ANSWER_JOB_BYTES): number {
  let used = 0;
  for (let i = 0; i < jobs.length; i++) {
    used += jobBytes(jobs[i] as ClaimedJob);
    if (used > budget && i > 0) return i;
  }
  return jobs.length;
}
