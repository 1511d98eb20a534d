import { decodeJson, decodeText } from "./payload.js";
import type { ClaimedJob } from "./wire/claimed-job.js";

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
  job: ClaimedJob,
  abort: { readonly signal: AbortSignal },
  deadline: () => number,
): JobContext {
  return new ClaimedJobContext(job, abort, deadline);
}

/** A class rather than an object literal: one allocation per job, its methods shared by all. */
class ClaimedJobContext implements JobContext {
  readonly id: string;
  readonly queue: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly payload: Uint8Array;
  readonly contentType: string;
  readonly priority: number;
  readonly flowKey: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly #enqueuedAtMs: number | undefined;
  readonly #abort: { readonly signal: AbortSignal };
  readonly #deadline: () => number;

  constructor(job: ClaimedJob, abort: { readonly signal: AbortSignal }, deadline: () => number) {
    this.id = job.id;
    this.queue = job.queue;
    this.attempt = job.attempt;
    this.maxAttempts = job.maxAttempts;
    this.payload = job.payload;
    this.contentType = job.contentType;
    this.priority = job.priority;
    this.flowKey = job.flowKey;
    this.headers = job.headers;
    this.#enqueuedAtMs = job.enqueuedAtMs;
    this.#abort = abort;
    this.#deadline = deadline;
  }

  get enqueuedAt(): Date | undefined {
    return this.#enqueuedAtMs === undefined ? undefined : new Date(this.#enqueuedAtMs);
  }

  get leaseDeadline(): Date {
    return new Date(this.#deadline());
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  json<T = unknown>(): T {
    return decodeJson<T>(this.payload);
  }

  text(): string {
    return decodeText(this.payload);
  }
}
