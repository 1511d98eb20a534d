/**
 * `source` with `f` applied to each item. Hand-written rather than an async generator so that a
 * `return()` or `throw()` (a stream ending early) reaches the source at once, not only when the source
 * yields next.
 */
export function mapAsync<T, U>(source: AsyncIterable<T>, f: (t: T) => U): AsyncIterable<U> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<U> {
      const it = source[Symbol.asyncIterator]();
      return {
        next: async () => {
          const r = await it.next();
          return r.done ? { done: true, value: undefined } : { done: false, value: f(r.value) };
        },
        return: async () => {
          await it.return?.();
          return { done: true, value: undefined };
        },
        throw: async (err: unknown) => {
          await it.return?.();
          throw err;
        },
      };
    },
  };
}
