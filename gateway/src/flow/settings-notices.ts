/**
 * Counts the settings notifications (NOTIFY taskq_queues) this gateway's LISTEN connection has seen,
 * per queue, so a verb can wait for its own change to come back before it answers. Postgres hands a
 * notification to every listening gateway at the same commit: once ours has arrived, the others' have
 * too, give or take their event loops, and the change holds on the next claim on every instance.
 */
export class SettingsNotices {
  readonly #seen = new Map<string, number>();
  readonly #waiting = new Map<string, Set<() => void>>();

  /** How many notifications of `queue` have arrived so far. */
  seen(queue: string): number {
    return this.#seen.get(queue) ?? 0;
  }

  /** One more notification of `queue` arrived. */
  notified(queue: string): void {
    this.#seen.set(queue, this.seen(queue) + 1);
    for (const wake of this.#waiting.get(queue) ?? []) wake();
  }

  /**
   * Resolves true once a notification of `queue` beyond `seen` arrived, or false after `timeoutMs`
   * (a lost LISTEN connection must not hang the verb).
   */
  waitPast(queue: string, seen: number, timeoutMs: number): Promise<boolean> {
    if (this.seen(queue) > seen) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiting = this.#waiting.get(queue) ?? new Set();
      this.#waiting.set(queue, waiting);
      const done = (arrived: boolean) => {
        clearTimeout(timer);
        waiting.delete(wake);
        if (waiting.size === 0) this.#waiting.delete(queue);
        resolve(arrived);
      };
      const wake = () => {
        if (this.seen(queue) > seen) done(true);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      waiting.add(wake);
    });
  }
}
