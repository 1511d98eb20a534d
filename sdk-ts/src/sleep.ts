/** Resolve after `ms`, or at once when `signal` aborts. Never rejects: callers re-check their state. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * A level-free wake-up: `wait()` resolves on the next `notify()`, after `ms`, or on abort, whichever
 * comes first. Loops use it to re-check their condition when something changed.
 */
export class Wakeup {
  #waiters: Array<() => void> = [];

  notify(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  wait(ms = Number.POSITIVE_INFINITY, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.#waiters = this.#waiters.filter((w) => w !== done);
        resolve();
      };
      // setTimeout overflows past ~24.8 days; an unbounded wait just has no timer.
      const timer = Number.isFinite(ms)
        ? setTimeout(done, Math.max(0, Math.min(ms, 2 ** 31 - 1)))
        : undefined;
      signal?.addEventListener("abort", done, { once: true });
      this.#waiters.push(done);
    });
  }
}
