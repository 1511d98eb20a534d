import type { Timers } from "../claim/waiters.js";

/** A clock that moves only when a test says: `advance` runs the timers that come due, in order. */
export class ManualTimers implements Timers {
  #now = 1_000_000;
  #timers: { at: number; fn: () => void }[] = [];

  now(): number {
    return this.#now;
  }

  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.#now + ms, fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = due.at;
      due.fn();
    }
    this.#now = until;
  }

  /** Timers not yet run. */
  get pending(): number {
    return this.#timers.length;
  }
}
