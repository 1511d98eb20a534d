import { WireType } from "@bufbuild/protobuf/wire";
import { ByteReader } from "@taskq/sdk/internal";
import type { DurationFields, SettlementFields } from "./settlement-bytes.js";

/**
 * A taskq.v1.ClaimRequest as the gateway reads it: its settlements as messages (JSON codecs) or as their
 * encoded bytes (binary codecs, see by-bytes.ts). A decoded protobuf-es ClaimRequest (or its view with
 * settlements as bytes) has this shape.
 */
export interface ClaimFields {
  queues: readonly string[];
  maxJobs: number;
  maxWait?: DurationFields | undefined;
  workerId: string;
  leaseDuration?: DurationFields | undefined;
  settlements: readonly (SettlementFields | Uint8Array)[];
  concurrency?: number | undefined;
  prefetch?: number | undefined;
}

const LEN = WireType.LengthDelimited;
const VARINT = WireType.Varint;

/** Bytes this reader leaves to protobuf-es (see decodeClaimRequest). */
class NotPlain extends Error {}

/**
 * A ClaimRequest's bytes as protobuf-es reads them into ClaimRequestView, settlements left as bytes, at a
 * fraction of the cost of its reflection (one per poll). It reads the plain encoding every protobuf
 * library writes; for anything else (a known field with another wire type or given twice where
 * protobuf-es would merge, a number past what the field holds, a string that is not valid UTF-8, bytes
 * that do not parse) it answers undefined, and the caller decodes with protobuf-es, which answers as it
 * always has, errors included. claim-request-bytes.test.ts holds the two equal.
 */
export function decodeClaimRequest(bytes: Uint8Array): ClaimFields | undefined {
  try {
    return readClaimRequest(new ByteReader(bytes));
  } catch (err) {
    if (err instanceof NotPlain || err instanceof RangeError) return undefined;
    throw err;
  }
}

function readClaimRequest(r: ByteReader): ClaimFields {
  const queues: string[] = [];
  const settlements: Uint8Array[] = [];
  const c: ClaimFields = { queues, maxJobs: 0, workerId: "", settlements, concurrency: 0, prefetch: 0 };
  while (!r.done) {
    const key = tag(r);
    switch (key) {
      case (1 << 3) | LEN:
        queues.push(text(r));
        break;
      case (2 << 3) | VARINT:
        c.maxJobs = uint32(r);
        break;
      case (3 << 3) | LEN:
        if (c.maxWait) throw new NotPlain();
        c.maxWait = duration(r);
        break;
      case (4 << 3) | LEN:
        c.workerId = text(r);
        break;
      case (5 << 3) | LEN:
        if (c.leaseDuration) throw new NotPlain();
        c.leaseDuration = duration(r);
        break;
      case (6 << 3) | LEN:
        settlements.push(r.bytes());
        break;
      case (7 << 3) | VARINT:
        c.concurrency = uint32(r);
        break;
      case (8 << 3) | VARINT:
        c.prefetch = uint32(r);
        break;
      default:
        skipUnknown(r, key, 8);
    }
  }
  return c;
}

/** A field's key; protobuf-es refuses one past uint32. */
function tag(r: ByteReader): number {
  const key = r.key();
  if (key > 0xffffffff) throw new NotPlain();
  return key;
}

function uint32(r: ByteReader): number {
  const n = r.varint();
  if (n > 0xffffffff) throw new NotPlain();
  return n;
}

/**
 * protobuf-es decodes with TextDecoder: a replacement character may mean the two differ, and it drops
 * a leading U+FEFF (as a byte order mark) that this reading keeps.
 */
function text(r: ByteReader): string {
  const s = r.string();
  if (s.includes("\uFFFD") || s.charCodeAt(0) === 0xfeff) throw new NotPlain();
  return s;
}

/** A google.protobuf.Duration. */
function duration(r: ByteReader): DurationFields {
  const m = r.message();
  const d = { seconds: 0, nanos: 0 };
  while (!m.done) {
    const key = tag(m);
    if (key === ((1 << 3) | VARINT)) d.seconds = exact(m.int64());
    // int32: the varint's low 32 bits, signed.
    else if (key === ((2 << 3) | VARINT)) d.nanos = exact(m.int64()) | 0;
    else skipUnknown(m, key, 2);
  }
  return d;
}

/** An int64 read as a number is exact below 2^53 in magnitude; protobuf-es reads a bigint. */
function exact(n: number): number {
  if (!Number.isSafeInteger(n)) throw new NotPlain();
  return n;
}

/**
 * Skips a field the message does not have, as protobuf-es keeps it aside. Field number 0 (protobuf-es
 * refuses it) and a known field (`1..known`) in another wire type are protobuf-es's to judge.
 */
function skipUnknown(r: ByteReader, key: number, known: number): void {
  if (key >>> 3 <= known) throw new NotPlain();
  r.skip(key);
}
