import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { InvalidArgumentError } from "../errors.js";
import { QUEUE_NAME } from "../queue-name.js";
import type { DurationFields } from "./settlement-bytes.js";

const JOB_ID = /^[1-9][0-9]{0,18}$/;
const MAX_JOB_ID = 2n ** 63n - 1n;

export function queueName(field: string, v: string): string {
  if (!QUEUE_NAME.test(v)) {
    throw new InvalidArgumentError(
      field,
      "must be 1 to 128 letters or digits or . _ - and start with a letter or digit",
    );
  }
  return v;
}

export function jobId(field: string, v: string): string {
  // Only a 19-digit id can pass 2^63 - 1: the BigInt check is skipped for every shorter one.
  if (!JOB_ID.test(v) || (v.length === 19 && BigInt(v) > MAX_JOB_ID))
    throw new InvalidArgumentError(field, "must be a job id (a positive integer below 2^63)");
  return v;
}

export function intRange(field: string, v: number, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max)
    throw new InvalidArgumentError(field, `must be from ${min} to ${max} (got ${v})`);
  return v;
}

/**
 * At most `max` bytes; a string also must not contain NUL (U+0000), which Postgres text cannot hold:
 * the store would answer INTERNAL where the client deserves INVALID_ARGUMENT.
 */
export function maxBytes(field: string, v: string | Uint8Array, max: number): void {
  const size = typeof v === "string" ? Buffer.byteLength(v) : v.byteLength;
  if (size > max) throw new InvalidArgumentError(field, `must be at most ${max} bytes (got ${size})`);
  if (typeof v === "string" && v.includes("\u0000"))
    throw new InvalidArgumentError(field, "must not contain NUL (U+0000)");
}

export function count(field: string, n: number, min: number, max: number): void {
  if (n < min || n > max)
    throw new InvalidArgumentError(field, `must have ${min} to ${max} entries (got ${n})`);
}

/** A Duration in ms, within [minMs, maxMs]; undefined when unset. */
export function durationMs(
  field: string,
  d: DurationFields | undefined,
  minMs: number,
  maxMs: number,
): number | undefined {
  if (d === undefined) return undefined;
  const ms = Number(d.seconds) * 1000 + Math.floor(d.nanos / 1e6);
  if (Number(d.seconds) < 0 || d.nanos < 0 || !Number.isFinite(ms))
    throw new InvalidArgumentError(field, "must not be negative");
  if (ms < minMs || ms > maxMs)
    throw new InvalidArgumentError(field, `must be from ${minMs} ms to ${maxMs} ms, got ${ms} ms`);
  return ms;
}

export function timestamp(field: string, t: Timestamp): Date {
  const ms = Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6);
  const date = new Date(ms);
  // Postgres timestamptz covers 4713 BC to 294276 AD; stay well inside and reject nonsense.
  if (Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1970 || date.getUTCFullYear() > 9999) {
    throw new InvalidArgumentError(field, "must be a time between 1970 and 9999");
  }
  return date;
}
