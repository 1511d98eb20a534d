/**
 * A stream's requests until `refusal` aborts: then the read waiting for the next message, or the next
 * one asked for, fails with the refusal's reason, so a handler waiting on its client ends at once
 * instead of at the client's next message. Messages read before are passed on unchanged.
 */
export async function* untilRefused<T>(requests: AsyncIterable<T>, refusal: AbortSignal): AsyncGenerator<T> {
  const it = requests[Symbol.asyncIterator]();
  const refused = new Promise<never>((_, reject) => {
    if (refusal.aborted) reject(refusal.reason);
    else refusal.addEventListener("abort", () => reject(refusal.reason), { once: true });
  });
  refused.catch(() => {}); // raced below; this only keeps it from counting as unhandled
  let done = false;
  try {
    for (;;) {
      const r = await Promise.race([it.next(), refused]);
      if (r.done) {
        done = true;
        return;
      }
      yield r.value;
    }
  } finally {
    // A read still waiting on the client settles when its stream closes; nothing waits for it.
    if (!done) it.return?.()?.catch(() => {});
  }
}
