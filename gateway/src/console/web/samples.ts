import type { QueueRow } from "./queues-model.js";

/** One reading of a queue, taken at each poll while its page is open. */
export interface Sample {
  /** ms since the epoch. */
  at: number;
  queued: number;
  running: number;
  /** Null while running jobs are not capped. */
  maxRunning: number | null;
  /** Jobs finished in the minute before `at`. */
  succeededPerMinute: number;
  failedPerMinute: number;
  /** Polls declined over the hour before `at`, all reasons together. */
  throttledLastHour: number;
}

/**
 * The readings of the last `windowMs`, oldest first. The gateway keeps no history for the console:
 * the charts start empty when the page opens and fill as it polls.
 */
export class Samples {
  #samples: Sample[] = [];

  constructor(private readonly windowMs: number) {}

  add(q: QueueRow, at: number): void {
    this.#samples.push({
      at,
      queued: q.queued + q.scheduled,
      running: q.running,
      maxRunning: q.maxRunning,
      succeededPerMinute: q.succeededLastMinute,
      failedPerMinute: q.failedLastMinute,
      throttledLastHour: q.throttled.reduce((sum, [, n]) => sum + n, 0),
    });
    const oldest = at - this.windowMs;
    while ((this.#samples[0]?.at ?? at) < oldest) this.#samples.shift();
  }

  get all(): readonly Sample[] {
    return this.#samples;
  }
}
