import { create } from "@bufbuild/protobuf";
import { type BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  type ClaimResponse,
  ClaimResponseSchema,
  type SettleResponse,
  SettleResponseSchema,
  SettleStatus,
  ThrottleReason,
} from "@taskq/sdk/proto";
import type { PollResult } from "../claim/claimer.js";
import type { ClaimedJob, SettleOutcome } from "../store/types.js";
import { claimedJob, durationFromMs, jobState, optTs } from "./convert.js";
import { withEncodedEntries, writeInt32, writeString, writeTimestampMs, writeUint32 } from "./wire.js";

// The two responses of the hot path. For binary codecs their repeated entries are encoded by hand
// (see wire.ts); for JSON codecs they are ordinary messages. responses.test.ts holds the two equal.

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
  return create(SettleResponseSchema, {
    results: out.map((o) => ({
      lease: { jobId: o.jobId, attempt: o.attempt },
      status: settleStatus[o.status],
      state: jobState(o.state),
      nextRunAt: optTs(o.nextRunAt),
    })),
  });
}

/** The bytes of the taskq.v1.SettleResult that `settleResponse` builds for JSON codecs. */
function writeSettleResult(w: BinaryWriter, o: SettleOutcome): void {
  w.tag(1, WireType.LengthDelimited).fork();
  writeString(w, 1, o.jobId);
  writeUint32(w, 2, o.attempt);
  w.join();
  writeInt32(w, 2, settleStatus[o.status]);
  writeInt32(w, 3, jobState(o.state));
  if (o.nextRunAt) writeTimestampMs(w, 4, o.nextRunAt.getTime());
}

/** The answer to one poll: its jobs and verdicts. */
export function claimResponse(res: PollResult, binary: boolean): ClaimResponse {
  const throttled = res.verdicts.map((v) => ({
    queue: v.queue,
    reason: ThrottleReason[v.reason],
    retryAfter: durationFromMs(v.retryAfterMs),
  }));
  if (!binary) return create(ClaimResponseSchema, { jobs: res.jobs.map(claimedJob), throttled });
  return withEncodedEntries(
    ClaimResponseSchema,
    { throttled },
    1,
    res.jobs,
    writeClaimedJob,
  ) as ClaimResponse;
}

/** The bytes of the taskq.v1.Job that `claimedJob` builds for JSON codecs. */
function writeClaimedJob(w: BinaryWriter, j: ClaimedJob): void {
  writeString(w, 1, j.id);
  writeString(w, 2, j.queue);
  writeUint32(w, 3, j.attempt);
  writeUint32(w, 4, j.maxAttempts);
  writeTimestampMs(w, 5, j.leaseDeadlineMs);
  if (j.payload.length > 0) w.tag(6, WireType.LengthDelimited).bytes(j.payload);
  writeString(w, 7, j.contentType);
  writeInt32(w, 8, j.priority);
  writeString(w, 9, j.flowKey ?? "");
  writeTimestampMs(w, 10, j.enqueuedAtMs);
  for (const key in j.headers) {
    w.tag(11, WireType.LengthDelimited).fork();
    w.tag(1, WireType.LengthDelimited).string(key);
    w.tag(2, WireType.LengthDelimited).string(j.headers[key] ?? "");
    w.join();
  }
}
