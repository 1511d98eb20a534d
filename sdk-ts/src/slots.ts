import { Wakeup } from "./sleep.js";

/**
 * Places for claimed jobs: the worker's handler slots (its concurrency) plus its look-ahead buffer,
 * whose size may change from poll to poll. The claim loop reserves free places before it polls and asks
 * for exactly that many jobs, so a claimed job always has a place. A place returns when its job's
 * handler is done and the settle is queued (`toSettling`), when the job ends without a settle
 * (`release`), or when a poll brings fewer jobs than it asked for.
 *
 * Settles still unanswered are bounded too: at most `capacity` of them, so a slow Settle stream holds
 * back claiming instead of piling up finished jobs. Claiming for the next jobs therefore overlaps with
 * settling the last ones, while no more than `capacity` handlers ever run at once.
 */
export class Slots {
  #used = 0;
  #settling = 0;
  readonly #changed = new Wakeup();

  /** `ahead`: the look-ahead buffer's size now. */
  constructor(
    readonly concurrency: number,
    readonly ahead: () => number = () => 0,
  ) {}

  /** Handler slots plus the buffer's size now. */
  get capacity(): number {
    return this.concurrency + this.ahead();
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

  /**
   * Of the free places, those a job claimed now would start in at once: handler slots no running or
   * buffered job holds.
   */
  get startable(): number {
    return Math.max(0, Math.min(this.free, this.concurrency - this.#used));
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

  /** Resolves true once a handler slot is free ({@link startable}), false if `signal` aborts first. */
  async waitStartable(signal: AbortSignal): Promise<boolean> {
    while (this.startable < 1 && !signal.aborted) await this.#changed.wait(Number.POSITIVE_INFINITY, signal);
    return !signal.aborted;
  }
}
