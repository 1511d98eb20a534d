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
 * `call` is the stream's own signal. It lives as long as the stream, so each poll's signal follows it
 * through one listener for the whole stream: `AbortSignal.any([call, poll])` per poll leaves an entry in
 * the long-lived signal that Node never prunes (nodejs/node#55351), a leak of every poll a stream
 * ever carried, and cost ~7 µs a poll.
 */
export async function* pollsOf<T>(
  requests: AsyncIterable<T>,
  call: AbortSignal,
): AsyncGenerator<StreamPoll<T>> {
  const it = requests[Symbol.asyncIterator]();
  let current: AbortController | undefined;
  const callEnded = () => current?.abort();
  call.addEventListener("abort", callEnded, { once: true });
  try {
    let next = it.next();
    for (;;) {
      const r = await next;
      if (r.done) return;
      next = it.next();
      const poll = new AbortController();
      current = poll;
      if (call.aborted) poll.abort();
      // A read that fails ends the stream too; the loop rethrows it on its next await.
      next.then(
        (n) => n.done && poll.abort(),
        () => poll.abort(),
      );
      yield { req: r.value, signal: poll.signal };
    }
  } finally {
    call.removeEventListener("abort", callEnded);
  }
}
