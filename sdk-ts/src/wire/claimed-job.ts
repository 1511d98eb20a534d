import { WireType } from "@bufbuild/protobuf/wire";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Job } from "../gen/taskq/v1/job_pb.js";
import { ByteReader } from "./byte-reader.js";

/** One claimed job as the worker uses it: a taskq.v1.Job with its timestamps as epoch ms. */
export interface ClaimedJob {
  id: string;
  queue: string;
  attempt: number;
  maxAttempts: number;
  /** Undefined when the gateway did not say. */
  leaseDeadlineMs: number | undefined;
  payload: Uint8Array;
  contentType: string;
  priority: number;
  flowKey: string;
  /** Undefined when the gateway did not say. */
  enqueuedAtMs: number | undefined;
  headers: Record<string, string>;
}

const EMPTY = new Uint8Array(0);
const LEN = WireType.LengthDelimited;
const VARINT = WireType.Varint;

/** A taskq.v1.Job's bytes as a ClaimedJob, without building the message (see ByteReader). */
export function decodeJob(bytes: Uint8Array): ClaimedJob {
  const job: ClaimedJob = {
    id: "",
    queue: "",
    attempt: 0,
    maxAttempts: 0,
    leaseDeadlineMs: undefined,
    payload: EMPTY,
    contentType: "",
    priority: 0,
    flowKey: "",
    enqueuedAtMs: undefined,
    headers: {},
  };
  const r = new ByteReader(bytes);
  while (!r.done) {
    const key = r.key();
    switch (key) {
      case (1 << 3) | LEN:
        job.id = r.string();
        break;
      case (2 << 3) | LEN:
        job.queue = r.string();
        break;
      case (3 << 3) | VARINT:
        job.attempt = r.varint();
        break;
      case (4 << 3) | VARINT:
        job.maxAttempts = r.varint();
        break;
      case (5 << 3) | LEN:
        job.leaseDeadlineMs = r.secondsNanosMs();
        break;
      case (6 << 3) | LEN:
        job.payload = r.bytes();
        break;
      case (7 << 3) | LEN:
        job.contentType = r.string();
        break;
      case (8 << 3) | VARINT:
        job.priority = r.int32();
        break;
      case (9 << 3) | LEN:
        job.flowKey = r.string();
        break;
      case (10 << 3) | LEN:
        job.enqueuedAtMs = r.secondsNanosMs();
        break;
      case (11 << 3) | LEN:
        readHeader(r.message(), job.headers);
        break;
      default:
        r.skip(key);
    }
  }
  return job;
}

/**
 * One map<string, string> entry; a later entry of the same key wins, as in protobuf-es. A header
 * named `__proto__` is defined as an own key: plain assignment would set the object's prototype.
 */
function readHeader(r: ByteReader, headers: Record<string, string>): void {
  let key = "";
  let value = "";
  while (!r.done) {
    const k = r.key();
    if (k === ((1 << 3) | LEN)) key = r.string();
    else if (k === ((2 << 3) | LEN)) value = r.string();
    else r.skip(k);
  }
  if (key === "__proto__") {
    Object.defineProperty(headers, key, { value, enumerable: true, writable: true, configurable: true });
  } else headers[key] = value;
}

/** The same from a decoded message (transports that are not known to speak binary protobuf). */
export function jobFromMessage(job: Job): ClaimedJob {
  return {
    id: job.id,
    queue: job.queue,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    leaseDeadlineMs: job.leaseDeadline ? timestampMs(job.leaseDeadline) : undefined,
    payload: job.payload,
    contentType: job.contentType,
    priority: job.priority,
    flowKey: job.flowKey,
    enqueuedAtMs: job.enqueuedAt ? timestampMs(job.enqueuedAt) : undefined,
    headers: job.headers,
  };
}
