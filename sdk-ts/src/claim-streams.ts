import { Poller, type PollerOptions } from "./poller.js";
import { QueueSleep } from "./queue-sleep.js";

/**
 * A worker's Claim streams: `count` pollers over one set of slots and one record of sleeping queues.
 * With two or more, one stream's poll is out while the jobs another brought run, so claiming overlaps
 * with running; each poll asks for at most its share of the slots, so the streams take turns instead of
 * one holding every slot. One stream polls exactly as a single poller always has.
 */
export class ClaimStreams {
  readonly #pollers: Poller[];

  constructor(count: number, opts: Omit<PollerOptions, "sleep" | "maxPollJobs">) {
    const sleep = new QueueSleep();
    const maxPollJobs = Math.ceil(opts.slots.capacity / count);
    this.#pollers = Array.from({ length: count }, () => new Poller({ ...opts, sleep, maxPollJobs }));
  }

  /** Some poll is out and unanswered. */
  get polling(): boolean {
    return this.#pollers.some((p) => p.polling);
  }

  /** Resolves when every loop has ended. */
  get done(): Promise<void> {
    return Promise.all(this.#pollers.map((p) => p.done)).then(() => {});
  }

  start(): void {
    for (const p of this.#pollers) p.start();
  }

  /** Poll no more; half-close every stream (see Poller.drain). */
  drain(): void {
    for (const p of this.#pollers) p.drain();
  }

  /** Cancel every stream, outstanding polls included (see Poller.abort). */
  abort(): void {
    for (const p of this.#pollers) p.abort();
  }
}
