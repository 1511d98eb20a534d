import { Wakeup } from "./sleep.js";

/**
 * Job slots of a worker (its concurrency). The claim loop reserves every free slot before it polls
 * and asks for exactly that many jobs, so a claimed job always has a slot to run in; a slot returns when
 * its job's settle is answered (or given up), or when a poll brings fewer jobs than it asked for.
 */
export class Slots {
  readonly capacity: number;
  #used = 0;
  readonly #changed = new Wakeup();

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get used(): number {
    return this.#used;
  }

  get free(): number {
    return Math.max(0, this.capacity - this.#used);
  }

  /** Take `n` slots. May exceed capacity only if the gateway over-delivers; `free` then stays 0. */
  acquire(n: number): void {
    this.#used += n;
  }

  release(n = 1): void {
    if (n <= 0) return;
    this.#used = Math.max(0, this.#used - n);
    this.#changed.notify();
  }

  /** Resolves true once a slot is free, false if `signal` aborts first. */
  async waitFree(signal: AbortSignal): Promise<boolean> {
    while (this.free === 0) {
      if (signal.aborted) return false;
      await this.#changed.wait(Number.POSITIVE_INFINITY, signal);
    }
    return !signal.aborted;
  }
}
