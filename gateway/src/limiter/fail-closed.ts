import type { Limiter } from "./limiter.js";

/** The limiter could not be reached; the gate that needed it declines. */
export class LimiterUnavailableError extends Error {
  override name = "LimiterUnavailableError";
}

/** How long a worker waits before asking a gate whose limiter is unreachable again, ms. */
export const LIMITER_DOWN_RETRY_MS = 1000;

/**
 * How long one limiter (or readiness) call to Redis may take before it counts as unreachable, ms. A
 * script answers in well under a millisecond; without a bound, a Redis that stops answering while its
 * connection stays open (a stall, not a refusal) hung every gated poll and left readiness green.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 1000;

/**
 * Limits fail closed: a limit protects a downstream (an API that answers 429 past it), so while Redis
 * is unreachable the gates that need it decline with their own reason and a 1 s retry_after rather
 * than admit unmetered work. Queues without such gates are not affected. A failed take throws
 * LimiterUnavailableError; a failed refund or reset is dropped (it can only admit less, never more).
 */
export function failClosed(inner: Limiter, onError: (err: unknown) => void): Limiter {
  const take =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      try {
        return await fn(...a);
      } catch (err) {
        onError(err);
        throw new LimiterUnavailableError((err as Error).message);
      }
    };
  const give =
    <A extends unknown[]>(fn: (...a: A) => Promise<void>) =>
    async (...a: A): Promise<void> => {
      try {
        await fn(...a);
      } catch (err) {
        onError(err);
      }
    };
  return {
    throttleTake: take(inner.throttleTake.bind(inner)),
    throttleConfirm: give(inner.throttleConfirm.bind(inner)),
    throttleRefund: give(inner.throttleRefund.bind(inner)),
    throttleReset: give(inner.throttleReset.bind(inner)),
    rateTake: take(inner.rateTake.bind(inner)),
    rateRefund: give(inner.rateRefund.bind(inner)),
    rateReset: give(inner.rateReset.bind(inner)),
    rampTake: take(inner.rampTake.bind(inner)),
    rampRefund: give(inner.rampRefund.bind(inner)),
    throttlePeek: take(inner.throttlePeek.bind(inner)),
    ratePeek: take(inner.ratePeek.bind(inner)),
    rampPeek: take(inner.rampPeek.bind(inner)),
    close: () => inner.close(),
  };
}
