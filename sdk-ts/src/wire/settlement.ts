import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import {
  type Settlement,
  SettlementSchema,
  type SettleResult,
  SettleStatus,
} from "../gen/taskq/v1/worker_pb.js";
import { ByteReader } from "./byte-reader.js";
import { ByteWriter } from "./byte-writer.js";

/** What a handler's attempt came to: the `outcome` oneof of taskq.v1.Settlement. */
export type Outcome = NonNullable<MessageInitShape<typeof SettlementSchema>["outcome"]>;

/** One settlement as the worker queues it. */
export interface SettleEntry {
  jobId: string;
  attempt: number;
  outcome: Outcome;
  /** How long the handler ran, whole ms. */
  durationMs: number;
}

/** The part of a taskq.v1.SettleResult the worker reads. */
export interface SettleAnswer {
  jobId: string;
  attempt: number;
  status: SettleStatus;
}

/** Each settlement's taskq.v1.Settlement bytes, written into one buffer (a view's `repeated bytes`). */
export function encodeSettlements(batch: readonly SettleEntry[]): Uint8Array[] {
  if (batch.length === 0) return [];
  const w = new ByteWriter();
  return batch.map((e) => {
    const start = w.mark();
    encodeSettlement(w, e);
    return w.since(start);
  });
}

/** The taskq.v1.Settlement that `settlementMessage` builds, written straight into `w`. */
export function encodeSettlement(w: ByteWriter, e: SettleEntry): void {
  const lease = w.message(1);
  w.string(1, e.jobId);
  w.uint(2, e.attempt);
  w.end(lease);
  const o = e.outcome;
  switch (o.case) {
    case "success": {
      const at = w.message(2);
      w.bytes(1, o.value.result ?? EMPTY);
      w.end(at);
      break;
    }
    case "failure": {
      const at = w.message(3);
      w.string(1, o.value.type ?? "");
      w.string(2, o.value.message ?? "");
      w.bool(3, o.value.retryable ?? false);
      const after = o.value.retryAfter;
      if (after) w.durationMs(4, Number(after.seconds ?? 0) * 1000 + (after.nanos ?? 0) / 1_000_000);
      w.end(at);
      break;
    }
    case "cancelled":
      writeReason(w, 4, o.value.reason);
      break;
  }
  // Fields in number order, as protobuf-es writes them: duration (5) before released (6).
  w.durationMs(5, e.durationMs);
  if (o.case === "released") writeReason(w, 6, o.value.reason);
}

/** Cancelled and Released: a message of one string field, `reason`. */
function writeReason(w: ByteWriter, field: number, reason: string | undefined): void {
  const at = w.message(field);
  w.string(1, reason ?? "");
  w.end(at);
}

/** The same settlement as a message (transports that are not known to speak binary protobuf). */
export function settlementMessage(e: SettleEntry): Settlement {
  return create(SettlementSchema, {
    lease: { jobId: e.jobId, attempt: e.attempt },
    outcome: e.outcome,
    duration: durationFromMs(e.durationMs),
  });
}

/** A taskq.v1.SettleResult's bytes as a SettleAnswer. */
export function decodeSettleResult(bytes: Uint8Array): SettleAnswer {
  const answer: SettleAnswer = { jobId: "", attempt: 0, status: SettleStatus.UNSPECIFIED };
  const r = new ByteReader(bytes);
  while (!r.done) {
    const key = r.key();
    if (key === ((1 << 3) | WireType.LengthDelimited)) {
      const lease = r.message();
      while (!lease.done) {
        const k = lease.key();
        if (k === ((1 << 3) | WireType.LengthDelimited)) answer.jobId = lease.string();
        else if (k === ((2 << 3) | WireType.Varint)) answer.attempt = lease.varint();
        else lease.skip(k);
      }
    } else if (key === ((2 << 3) | WireType.Varint)) answer.status = r.int32();
    else r.skip(key);
  }
  return answer;
}

/** The same from a decoded message. */
export function answerFromMessage(result: SettleResult): SettleAnswer {
  return { jobId: result.lease?.jobId ?? "", attempt: result.lease?.attempt ?? 0, status: result.status };
}

const EMPTY = new Uint8Array(0);
