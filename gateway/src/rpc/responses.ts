import { create } from "@bufbuild/protobuf";
import type { ByteWriter } from "@taskq/sdk/internal";
import {
  type ClaimResponse,
  ClaimResponseSchema,
  type SettleResponse,
  SettleResponseSchema,
  SettleStatus,
  ThrottleReason,
} from "@taskq/sdk/proto";
import type { PollResult } from "../claim/poll-loop.js";
import type { ClaimedJob, SettleOutcome } from "../store/types.js";
import { claimedJob, durationFromMs, jobState, optTs } from "./convert.js";
import { addEncodedEntries, withEncodedEntries } from "./wire.js";

// The two responses of the hot path. For binary codecs their repeated entries are encoded by hand
// into one buffer (see wire.ts); for JSON codecs they are ordinary messages. responses.test.ts holds the two equal.

const settleStatus = {
  accepted: SettleStatus.ACCEPTED,
  lease_lost: SettleStatus.LEASE_LOST,
  conflict: SettleStatus.CONFLICT,
  not_found: SettleStatus.NOT_FOUND,
} as const;

/** The answer to one SettleRequest: one result per settlement, in order. */
export function settleResponse(out: readonly SettleOutcome[], binary: boolean): SettleResponse {
  if (binary)
    return withEncodedEntries(SettleResponseSchema, {}, 1, out, writeSettleResult) as SettleResponse;
  return create(SettleResponseSchema, { results: out.map(settleResult) });
}

/** One taskq.v1.SettleResult, as a message's init. */
function settleResult(o: SettleOutcome) {
  return {
    lease: { jobId: o.jobId, attempt: o.attempt },
    status: settleStatus[o.status],
    state: jobState(o.state),
    nextRunAt: optTs(o.nextRunAt),
  };
}

/** The bytes of the taskq.v1.SettleResult that `settleResponse` builds for JSON codecs. */
function writeSettleResult(w: ByteWriter, o: SettleOutcome): void {
  const lease = w.message(1);
  w.string(1, o.jobId);
  w.uint(2, o.attempt);
  w.end(lease);
  w.uint(2, settleStatus[o.status]);
  w.uint(3, jobState(o.state));
  if (o.nextRunAt) w.timestampMs(4, o.nextRunAt.getTime());
}

/** The answer to one poll: its jobs, its verdicts and the results of the settlements it carried. */
export function claimResponse(res: PollResult, binary: boolean): ClaimResponse {
  const throttled = res.verdicts.map((v) => ({
    queue: v.queue,
    reason: ThrottleReason[v.reason],
    retryAfter: durationFromMs(v.retryAfterMs),
  }));
  const settled = res.settled ?? [];
  if (!binary)
    return create(ClaimResponseSchema, {
      jobs: res.jobs.map(claimedJob),
      throttled,
      settleResults: settled.map(settleResult),
    });
  const msg = withEncodedEntries(ClaimResponseSchema, { throttled }, 1, res.jobs, writeClaimedJob);
  return addEncodedEntries(msg, 3, settled, writeSettleResult) as ClaimResponse;
}

/** The bytes of the taskq.v1.Job that `claimedJob` builds for JSON codecs. */
function writeClaimedJob(w: ByteWriter, j: ClaimedJob): void {
  w.string(1, j.id);
  w.string(2, j.queue);
  w.uint(3, j.attempt);
  w.uint(4, j.maxAttempts);
  w.timestampMs(5, j.leaseDeadlineMs);
  w.bytes(6, j.payload);
  w.string(7, j.contentType);
  w.int32(8, j.priority);
  w.string(9, j.flowKey ?? "");
  w.timestampMs(10, j.enqueuedAtMs);
  for (const key in j.headers) w.mapEntry(11, key, j.headers[key] ?? "");
}
