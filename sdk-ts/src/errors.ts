import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { FailureSchema } from "./gen/taskq/v1/job_pb.js";

/** Throw from a handler to fail the job for good, whatever attempts remain. */
export class NonRetryableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/**
 * Throw from a handler to retry the job after exactly `retryAfterMs` instead of the gateway's backoff.
 * Any error with a numeric `retryAfterMs` property has the same effect.
 */
export class RetryAfterError extends Error {
  /** Delay before the next attempt, in ms. */
  readonly retryAfterMs: number;

  constructor(message: string, retryAfterMs: number, options?: ErrorOptions) {
    super(message, options);
    this.name = "RetryAfterError";
    this.retryAfterMs = retryAfterMs;
  }
}

// Bound what one settle carries: the gateway refuses a type over 255 bytes or a message over 16 KiB,
// and one refused settlement fails its whole batch. Chars, not bytes: 4000 UTF-16 units stay under
// 16 KiB of UTF-8 whatever they hold.
const MAX_TYPE_CHARS = 60;
const MAX_MESSAGE_CHARS = 4000;

/**
 * Shortened to `max` characters, and NUL replaced (the gateway refuses it: Postgres text cannot hold it),
 * so an error carrying binary junk still settles as a failure.
 */
function truncate(s: string, max: number): string {
  const clean = s.replaceAll("\u0000", "\uFFFD");
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/** The `Failure` a thrown value settles as. */
export function failureFromError(err: unknown): MessageInitShape<typeof FailureSchema> {
  const isError = err instanceof Error;
  const message = isError ? err.message : String(err);
  const retryAfterMs = (err as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  return {
    type: truncate(isError ? err.name : typeof err, MAX_TYPE_CHARS),
    message: truncate(message, MAX_MESSAGE_CHARS),
    retryable: !(err instanceof NonRetryableError),
    retryAfter:
      typeof retryAfterMs === "number" && Number.isFinite(retryAfterMs) && retryAfterMs >= 0
        ? durationFromMs(retryAfterMs)
        : undefined,
  };
}
