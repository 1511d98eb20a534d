/** One poll of a Claim stream, and a signal that fires once the worker has half-closed the stream. */
export interface StreamPoll<T> {
  req: T;
  drained: AbortSignal;
}

/**
 * The polls of one Claim stream, reading one message ahead: a worker that half-closes its stream is
 * draining, and the signal lets its outstanding long poll answer at once instead of sitting out
 * max_wait. The worker then receives that answer on a live stream, where cancelling the stream instead
 * could lose a response carrying jobs claimed a moment before the reset arrived.
 */
export async function* pollsOf<T>(requests: AsyncIterable<T>): AsyncGenerator<StreamPoll<T>> {
  const it = requests[Symbol.asyncIterator]();
  let next = it.next();
  for (;;) {
    const r = await next;
    if (r.done) return;
    next = it.next();
    const drained = new AbortController();
    // A read that fails ends the stream too; the loop rethrows it on its next await.
    next.then(
      (n) => n.done && drained.abort(),
      () => drained.abort(),
    );
    yield { req: r.value, drained: drained.signal };
  }
}
