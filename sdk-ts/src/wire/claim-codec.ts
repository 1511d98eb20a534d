import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import type { Duration } from "@bufbuild/protobuf/wkt";
import { type ThrottledVerdict, ThrottledVerdictSchema } from "../gen/taskq/v1/job_pb.js";
import { ByteReader } from "./byte-reader.js";
import { ByteWriter } from "./byte-writer.js";
import { decodeJob } from "./claimed-job.js";
import { decodeSettleResult, encodeSettlement, encodeSettlements } from "./settlement.js";
import type { ClaimAnswer, ClaimAsk } from "./worker-rpc.js";
import { ClaimRequestView } from "./worker-views.js";

// A poll and its answer on the wire, by hand: the Claim stream's one message each way per poll. The
// bytes are protobuf-es's (wire.test.ts holds them so): a taskq.v1.ClaimRequest, read by the
// gateway like any other, and a taskq.v1.ClaimResponse.

const LEN = WireType.LengthDelimited;

/** A poll's taskq.v1.ClaimRequest bytes: by hand, or through protobuf-es where encodeClaimAsk declines. */
export function encodeClaimRequest(ask: ClaimAsk): Uint8Array {
  const bytes = encodeClaimAsk(ask);
  if (bytes) return bytes;
  const settlements = encodeSettlements(ask.settlements ?? []);
  return toBinary(ClaimRequestView, create(ClaimRequestView, { ...ask, settlements } as never));
}

/**
 * A poll's taskq.v1.ClaimRequest bytes, fields in number order as protobuf-es writes them; undefined for
 * a duration this writer does not write (negative, or past 2^53 seconds: the worker sends neither).
 */
export function encodeClaimAsk(ask: ClaimAsk): Uint8Array | undefined {
  // A poll without settlements is a few dozen bytes; the writer grows for those with many.
  const w = new ByteWriter(256);
  for (const q of ask.queues) w.string(1, q, true);
  w.uint(2, ask.maxJobs);
  if (ask.maxWait && !writeDuration(w, 3, ask.maxWait)) return undefined;
  w.string(4, ask.workerId ?? "");
  if (ask.leaseDuration && !writeDuration(w, 5, ask.leaseDuration)) return undefined;
  for (const s of ask.settlements ?? []) {
    const at = w.message(6);
    encodeSettlement(w, s);
    w.end(at);
  }
  w.uint(7, ask.concurrency ?? 0);
  w.uint(8, ask.prefetch ?? 0);
  return w.since(0);
}

function writeDuration(w: ByteWriter, no: number, d: Duration): boolean {
  const seconds = Number(d.seconds);
  if (seconds < 0 || d.nanos < 0 || !Number.isSafeInteger(seconds)) return false;
  const at = w.message(no);
  w.uint(1, seconds);
  w.uint(2, d.nanos);
  w.end(at);
  return true;
}

/**
 * A taskq.v1.ClaimResponse's bytes as the worker's answer; undefined for bytes this reader does not read
 * plainly (a known field in another wire type, field number 0, a truncated value), which the caller
 * leaves to protobuf-es to read or refuse as it always has.
 */
export function decodeClaimAnswer(bytes: Uint8Array): ClaimAnswer | undefined {
  const answer: ClaimAnswer = { jobs: [], throttled: [], settled: [] };
  const r = new ByteReader(bytes);
  try {
    while (!r.done) {
      const key = r.key();
      if (key === ((1 << 3) | LEN)) answer.jobs.push(decodeJob(r.bytes()));
      else if (key === ((2 << 3) | LEN)) answer.throttled.push(verdict(r.bytes()));
      else if (key === ((3 << 3) | LEN)) answer.settled.push(decodeSettleResult(r.bytes()));
      else if (key > 0xffffffff || key >>> 3 <= 3) return undefined;
      else r.skip(key);
    }
  } catch (err) {
    if (err instanceof RangeError) return undefined;
    throw err;
  }
  return answer;
}

/** A ClaimResponse as decoded through its view (worker-views.ts): jobs and settle results as bytes. */
export interface ClaimResponseView {
  jobs: Uint8Array[];
  throttled: ThrottledVerdict[];
  settleResults: Uint8Array[];
}

/** The worker's answer from a ClaimResponse decoded through its view. */
export function answerFromView(res: ClaimResponseView): ClaimAnswer {
  return {
    jobs: res.jobs.map(decodeJob),
    throttled: res.throttled,
    settled: res.settleResults.map(decodeSettleResult),
  };
}

/** Verdicts are rare (a declined queue), so protobuf-es reads them, as the message the worker keeps. */
function verdict(bytes: Uint8Array): ThrottledVerdict {
  return fromBinary(ThrottledVerdictSchema, bytes);
}
