/**
 * What a gateway's start has opened so far (store, ports, connections, timers). A start that fails
 * closes them newest first, so nothing it opened keeps serving or keeps the process alive.
 */
export class Opened {
  readonly #closes: (() => unknown)[] = [];

  /** Notes how to close `thing`, just opened; returns it. */
  add<T>(thing: T, close: (thing: T) => unknown): T {
    this.#closes.push(() => close(thing));
    return thing;
  }

  /** Closes everything noted, newest first; a close that fails does not stop the others. */
  async closeAll(): Promise<void> {
    for (const close of this.#closes.splice(0).reverse()) {
      try {
        await close();
      } catch {
        // The start's own error is the one to report.
      }
    }
  }
}
