/** One poll of a Claim stream, and a signal that fires once the poll should be answered at once. */
export interface StreamPoll<T> {
  req: T;
  /** Aborts when the worker half-closes the stream, the stream fails, or the call ends. */
  signal: AbortSignal;
}

/**
 * The polls of one Claim stream, reading one message ahead: a worker that half-closes its stream is
 * draining, and the signal lets its outstanding long poll answer at once instead of sitting out
 * max_wait. The worker then receives that answer on a live stream, where cancelling the stream instead
 * could lose a response carrying jobs claimed a moment before the reset arrived.
 *
 * Every poll of the stream gets the same signal: each thing that aborts it (the half-close, a failed
 * read, the end of the call) ends the stream, so a poll never needs a signal of its own, and an
 * AbortController per poll is a noticeable share of a one-job poll's cost. The claim path removes its listeners when
 * each poll is done (claim/waiters.ts). `call` is the stream's own signal, followed through one
 * listener: `AbortSignal.any([call, poll])` per poll leaves an entry in the long-lived signal that Node
 * never prunes (nodejs/node#55351).
 */
export async function* pollsOf<T>(
  requests: AsyncIterable<T>,
  call: AbortSignal,
): AsyncGenerator<StreamPoll<T>> {
  const it = requests[Symbol.asyncIterator]();
  const ended = new AbortController();
  const end = () => ended.abort();
  call.addEventListener("abort", end, { once: true });
  try {
    let next = it.next();
    for (;;) {
      const r = await next;
      if (r.done) return;
      next = it.next();
      if (call.aborted) end();
      // A read that fails ends the stream too; the loop rethrows it on its next await.
      next.then((n) => n.done && end(), end);
      yield { req: r.value, signal: ended.signal };
    }
  } finally {
    call.removeEventListener("abort", end);
  }
}
