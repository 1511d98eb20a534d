import { Wakeup } from "./sleep.js";

/**
 * Job slots of a worker (its concurrency). The claim loop reserves free slots before it polls and asks
 * for exactly that many jobs, so a claimed job always has a slot to run in. A slot returns when its
 * job's handler is done and the settle is queued (`toSettling`), when the job ends without a settle
 * (`release`), or when a poll brings fewer jobs than it asked for.
 *
 * Settles still unanswered are bounded too: at most `capacity` of them, so a slow Settle stream holds
 * back claiming instead of piling up finished jobs. Claiming for the next jobs therefore overlaps with
 * settling the last ones, while no more than `capacity` handlers ever run at once.
 */
export class Slots {
  readonly capacity: number;
  #used = 0;
  #settling = 0;
  readonly #changed = new Wakeup();

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get used(): number {
    return this.#used;
  }

  /** Jobs whose handler is done and whose settle is not answered yet. */
  get settling(): number {
    return this.#settling;
  }

  /** Slots free to claim into: room under `capacity`, less any excess of unanswered settles. */
  get free(): number {
    return Math.max(0, Math.min(this.capacity - this.#used, 2 * this.capacity - this.#used - this.#settling));
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

  /** One job's handler is done and its settle is queued: its slot returns, its settle is counted. */
  toSettling(): void {
    this.#settling++;
    this.release(1);
  }

  /** A settle counted by `toSettling` was answered or given up. */
  settled(): void {
    this.#settling = Math.max(0, this.#settling - 1);
    this.#changed.notify();
  }

  /**
   * Waits, at most `ms`, until `n` slots are free; resolves false if `signal` aborts. Returns at once
   * when they already are.
   */
  async waitFreeAtLeast(n: number, ms: number, signal: AbortSignal): Promise<boolean> {
    const until = Date.now() + ms;
    while (this.free < n && !signal.aborted) {
      const left = until - Date.now();
      if (left <= 0) break;
      await this.#changed.wait(left, signal);
    }
    return !signal.aborted;
  }

  /** Resolves true once a slot is free, false if `signal` aborts first. */
  waitFree(signal: AbortSignal): Promise<boolean> {
    return this.waitFreeAtLeast(1, Number.POSITIVE_INFINITY, signal);
  }
}
