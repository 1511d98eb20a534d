import { WireType } from "@bufbuild/protobuf/wire";
import { ByteReader } from "@taskq/sdk/internal";
import { InvalidArgumentError } from "../errors.js";

/** A google.protobuf.Duration as read: seconds and nanos, whichever of the two types carries them. */
export interface DurationFields {
  seconds: bigint | number;
  nanos: number;
}

/**
 * The fields of a taskq.v1.Settlement the gateway reads. A decoded protobuf-es Settlement has this
 * shape (JSON codecs); decodeSettlement builds it from a Settlement's bytes (binary codecs).
 */
export interface SettlementFields {
  lease?: { jobId: string; attempt: number } | undefined;
  outcome:
    | { case: "success"; value: { result: Uint8Array } }
    | {
        case: "failure";
        value: { type: string; message: string; retryable: boolean; retryAfter?: DurationFields | undefined };
      }
    | { case: "cancelled"; value: { reason: string } }
    | { case: "released"; value: { reason: string } }
    | { case: undefined; value?: undefined };
  duration?: DurationFields | undefined;
}

const LEN = WireType.LengthDelimited;
const VARINT = WireType.Varint;
const EMPTY: Uint8Array = new Uint8Array(0);

/**
 * A taskq.v1.Settlement's bytes as SettlementFields, without building messages through protobuf-es's
 * reflection (a settle request carries one per finished job). Unknown fields are skipped, as protobuf-es
 * skips them; bytes that do not parse are the client's bad input, named by `field`.
 */
export function decodeSettlement(bytes: Uint8Array, field: string): SettlementFields {
  try {
    return readSettlement(new ByteReader(bytes));
  } catch (err) {
    if (err instanceof RangeError)
      throw new InvalidArgumentError(field, `is not a taskq.v1.Settlement: ${err.message}`);
    throw err;
  }
}

function readSettlement(r: ByteReader): SettlementFields {
  const s: SettlementFields = { outcome: { case: undefined } };
  while (!r.done) {
    const key = r.key();
    switch (key) {
      case (1 << 3) | LEN:
        s.lease = readLease(r.message());
        break;
      case (2 << 3) | LEN:
        s.outcome = { case: "success", value: { result: readSuccess(r.message()) } };
        break;
      case (3 << 3) | LEN:
        s.outcome = { case: "failure", value: readFailure(r.message()) };
        break;
      case (4 << 3) | LEN:
        s.outcome = { case: "cancelled", value: { reason: readReason(r.message()) } };
        break;
      case (6 << 3) | LEN:
        s.outcome = { case: "released", value: { reason: readReason(r.message()) } };
        break;
      case (5 << 3) | LEN:
        s.duration = r.secondsNanos();
        break;
      default:
        r.skip(key);
    }
  }
  return s;
}

function readLease(r: ByteReader): { jobId: string; attempt: number } {
  const lease = { jobId: "", attempt: 0 };
  while (!r.done) {
    const key = r.key();
    if (key === ((1 << 3) | LEN)) lease.jobId = r.string();
    else if (key === ((2 << 3) | VARINT)) lease.attempt = r.varint() % 2 ** 32;
    else r.skip(key);
  }
  return lease;
}

function readSuccess(r: ByteReader): Uint8Array {
  let result = EMPTY;
  while (!r.done) {
    const key = r.key();
    if (key === ((1 << 3) | LEN)) result = r.bytes();
    else r.skip(key);
  }
  return result;
}

function readFailure(r: ByteReader): Extract<SettlementFields["outcome"], { case: "failure" }>["value"] {
  const f: Extract<SettlementFields["outcome"], { case: "failure" }>["value"] = {
    type: "",
    message: "",
    retryable: false,
  };
  while (!r.done) {
    const key = r.key();
    if (key === ((1 << 3) | LEN)) f.type = r.string();
    else if (key === ((2 << 3) | LEN)) f.message = r.string();
    else if (key === ((3 << 3) | VARINT)) f.retryable = r.bool();
    else if (key === ((4 << 3) | LEN)) f.retryAfter = r.secondsNanos();
    else r.skip(key);
  }
  return f;
}

/** Cancelled and Released: one string field, `reason`. */
function readReason(r: ByteReader): string {
  let reason = "";
  while (!r.done) {
    const key = r.key();
    if (key === ((1 << 3) | LEN)) reason = r.string();
    else r.skip(key);
  }
  return reason;
}
