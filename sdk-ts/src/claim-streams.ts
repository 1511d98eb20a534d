import { Poller, type PollerOptions, type PollPlan } from "./poller.js";
import { QueueSleep } from "./queue-sleep.js";

/**
 * A worker's Claim streams: `count` pollers over one set of slots and one record of sleeping queues.
 *
 * A poll sent while no other stream's is out asks for every free slot, as a single stream's does, so
 * slots that free together are claimed in one poll, never one per stream. A poll sent while another's is
 * out asks for at most its share of the slots (so the streams take turns instead of one holding every
 * slot): while work is queued (the last answer brought all it asked for) once a quarter of its share is
 * free, so claiming overlaps with running in batches; while polls park, as soon as a slot is free, so a
 * worker between jobs keeps a poll parked at the gateway for the next enqueue to hand its jobs to even
 * while its other poll is being answered. One stream polls exactly as a single poller always has.
 */
export class ClaimStreams {
  readonly #pollers: Poller[];
  /** The last answer, on any stream, brought all it asked for. */
  #lastFull = false;

  constructor(count: number, opts: Omit<PollerOptions, "sleep" | "plan">) {
    const sleep = new QueueSleep();
    const { capacity } = opts.slots;
    const share = Math.ceil(capacity / count);
    this.#pollers = Array.from({ length: count }, (_, i) => {
      const plan = (): PollPlan => {
        if (!this.#pollers.some((p, j) => j !== i && p.polling))
          return { max: capacity, batch: Math.ceil(capacity / 4) };
        return { max: share, batch: this.#lastFull ? Math.ceil(share / 4) : 1 };
      };
      const answered = (full: boolean) => {
        this.#lastFull = full;
        opts.answered(full);
      };
      return new Poller({ ...opts, sleep, plan, answered });
    });
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
