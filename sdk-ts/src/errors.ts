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

// Bound what one settle carries: a huge message (a dumped response body, say) must not make the
// gateway refuse the whole settle batch.
const MAX_MESSAGE_CHARS = 4096;

/** The `Failure` a thrown value settles as. */
export function failureFromError(err: unknown): MessageInitShape<typeof FailureSchema> {
  const isError = err instanceof Error;
  const message = isError ? err.message : String(err);
  const retryAfterMs = (err as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  return {
    type: isError ? err.name : typeof err,
    message: message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message,
    retryable: !(err instanceof NonRetryableError),
    retryAfter:
      typeof retryAfterMs === "number" && Number.isFinite(retryAfterMs) && retryAfterMs >= 0
        ? durationFromMs(retryAfterMs)
        : undefined,
  };
}
