import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Job } from "./gen/taskq/v1/job_pb.js";
import { decodeJson, decodeText } from "./payload.js";

/** Why a handler's `signal` aborted; `signal.reason` is a {@link JobAbortError} carrying it. */
export type JobAbortKind =
  /** The lease expired or moved on: another worker may run the job; the result will not be settled. */
  | "lease_lost"
  /** A producer or operator cancelled the job; it is settled cancelled whatever the handler returns. */
  | "cancelled"
  /** The worker's shutdown grace ran out; the job is settled as a retryable `WorkerShutdown` failure. */
  | "shutdown";

/** The `signal.reason` of an aborted handler. */
export class JobAbortError extends Error {
  /** Which of lease loss, cancel or shutdown stopped the handler. */
  readonly kind: JobAbortKind;

  constructor(kind: JobAbortKind, message: string) {
    super(message);
    this.name = "JobAbortError";
    this.kind = kind;
  }
}

/** What a handler gets for one claimed job (one attempt of it). */
export interface JobContext {
  /** Job id, a decimal integer as a string. */
  readonly id: string;
  /** The queue the job was claimed from. */
  readonly queue: string;
  /** Attempt number, from 1; with `id` it identifies this lease. */
  readonly attempt: number;
  /** Attempts allowed before a failure is final. */
  readonly maxAttempts: number;
  /** The payload bytes as enqueued. */
  readonly payload: Uint8Array;
  /** MIME type the producer gave the payload ("" when unknown). */
  readonly contentType: string;
  /** Higher runs first. */
  readonly priority: number;
  /** Flow key, "" for none. */
  readonly flowKey: string;
  /** The free-form string headers the producer enqueued the job with. */
  readonly headers: Readonly<Record<string, string>>;
  /** When the job was enqueued; undefined if the gateway did not say. */
  readonly enqueuedAt: Date | undefined;
  /** When the lease ends unless extended; heartbeats move it forward. */
  readonly leaseDeadline: Date;
  /** Aborts on lease loss, cancel or shutdown deadline; `signal.reason` is a {@link JobAbortError}. */
  readonly signal: AbortSignal;
  /** The payload parsed as JSON; throws SyntaxError when it isn't JSON. */
  json<T = unknown>(): T;
  /** The payload as UTF-8 text. */
  text(): string;
}

/**
 * The context for `job`; `abort.signal` is read only if the handler asks for it, and `deadline` reads
 * the current lease deadline in epoch ms.
 */
export function createJobContext(
  job: Job,
  abort: { readonly signal: AbortSignal },
  deadline: () => number,
): JobContext {
  const payload = job.payload;
  return {
    id: job.id,
    queue: job.queue,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    payload,
    contentType: job.contentType,
    priority: job.priority,
    flowKey: job.flowKey,
    headers: job.headers,
    get enqueuedAt() {
      return job.enqueuedAt ? timestampDate(job.enqueuedAt) : undefined;
    },
    get leaseDeadline() {
      return new Date(deadline());
    },
    get signal() {
      return abort.signal;
    },
    json: <T>() => decodeJson<T>(payload),
    text: () => decodeText(payload),
  };
}
