/**
 * An unbounded push queue read as an AsyncIterable: the request side of a bidi stream. `close()` ends
 * iteration once queued items are drained, which half-closes the stream.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #waiter: ((r: IteratorResult<T>) => void) | undefined;
  #closed = false;

  /** Queue an item; ignored after close (the stream it fed is gone). */
  push(item: T): void {
    if (this.#closed) return;
    const waiter = this.#waiter;
    if (waiter) {
      this.#waiter = undefined;
      waiter({ value: item, done: false });
    } else {
      this.#items.push(item);
    }
  }

  /** End iteration after the queued items. Idempotent. */
  close(): void {
    this.#closed = true;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.({ value: undefined, done: true });
  }

  get closed(): boolean {
    return this.#closed;
  }

  get size(): number {
    return this.#items.length;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.#items.length > 0) return Promise.resolve({ value: this.#items.shift() as T, done: false });
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        if (this.#waiter) return Promise.reject(new Error("AsyncQueue supports one reader at a time"));
        return new Promise((resolve) => {
          this.#waiter = resolve;
        });
      },
      // The stream stopped reading: nothing more will be consumed.
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
      // connect aborts a call's request stream through throw(); like a generator that doesn't catch,
      // end and rethrow.
      throw: (err: unknown) => {
        this.close();
        return Promise.reject(err);
      },
    };
  }
}
