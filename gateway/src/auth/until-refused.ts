/**
 * A stream's requests until `refusal` aborts: then the read waiting for the next message, or the next
 * one asked for, fails with the refusal's reason, so a handler waiting on its client ends at once
 * instead of at the client's next message. Messages read before are passed on unchanged.
 *
 * Each read gets a promise of its own rather than a race with one promise of the refusal: every
 * `Promise.race` against a promise that never settles leaves a reaction on it, a leak of one per message
 * over a stream's life.
 */
export async function* untilRefused<T>(requests: AsyncIterable<T>, refusal: AbortSignal): AsyncGenerator<T> {
  const it = requests[Symbol.asyncIterator]();
  let fail: ((reason: unknown) => void) | undefined;
  const refused = () => fail?.(refusal.reason);
  refusal.addEventListener("abort", refused, { once: true });
  let done = false;
  try {
    for (;;) {
      if (refusal.aborted) throw refusal.reason;
      const r = await new Promise<IteratorResult<T>>((resolve, reject) => {
        fail = reject;
        it.next().then(resolve, reject);
      });
      fail = undefined;
      if (r.done) {
        done = true;
        return;
      }
      yield r.value;
    }
  } finally {
    refusal.removeEventListener("abort", refused);
    // A read still waiting on the client settles when its stream closes; nothing waits for it.
    if (!done) it.return?.()?.catch(() => {});
  }
}
