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
 * comes first. Loops use it to re-check their condition when something changed, so a wake-up for
 * another reason costs them nothing but a look.
 *
 * An abort wakes every waiter, through one listener per signal for the signal's life: a listener added
 * and removed at each wait (a claim loop waits once per job) cost a worker more than the rest of the
 * wait.
 */
export class Wakeup {
  #waiters = new Set<() => void>();
  readonly #watched = new WeakSet<AbortSignal>();

  notify(): void {
    const waiters = this.#waiters;
    this.#waiters = new Set();
    for (const w of waiters) w();
  }

  wait(ms = Number.POSITIVE_INFINITY, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    if (signal && !this.#watched.has(signal)) {
      this.#watched.add(signal);
      signal.addEventListener("abort", () => this.notify(), { once: true });
    }
    return new Promise((resolve) => {
      const done = () => {
        if (timer !== undefined) clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      // setTimeout overflows past ~24.8 days; an unbounded wait just has no timer.
      const timer = Number.isFinite(ms)
        ? setTimeout(done, Math.max(0, Math.min(ms, 2 ** 31 - 1)))
        : undefined;
      this.#waiters.add(done);
    });
  }
}
