/**
 * An AbortController made only when someone asks for its signal. Most handlers never look at
 * `ctx.signal`, and one controller per job was a measurable share of the worker's CPU and garbage
 * at thousands of jobs per second. An abort before the signal is read is remembered: the signal
 * handed out later is already aborted with the same reason.
 */
export class LazyAbort {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}
