/**
 * Per-queue sleep schedule for throttled verdicts: a declined queue is left out of polls until its
 * `retry_after` has passed, while the other queues keep polling. Pure: callers pass the clock.
 */
export class QueueSleep {
  readonly #wakeAt = new Map<string, number>();

  /** Skip `queue` for exactly `ms` from `now` (epoch ms). A later verdict replaces an earlier one. */
  sleep(queue: string, ms: number, now: number): void {
    this.#wakeAt.set(queue, now + Math.max(0, ms));
  }

  /** The queues among `queues` that may be polled at `now`, in their given order. */
  awake(queues: readonly string[], now: number): string[] {
    return queues.filter((q) => {
      const at = this.#wakeAt.get(q);
      if (at === undefined) return true;
      if (at > now) return false;
      this.#wakeAt.delete(q);
      return true;
    });
  }

  /** Ms from `now` until the earliest of `queues` wakes; 0 if one is already awake. */
  nextWakeIn(queues: readonly string[], now: number): number {
    let earliest = Number.POSITIVE_INFINITY;
    for (const q of queues) earliest = Math.min(earliest, this.#wakeAt.get(q) ?? now);
    return Number.isFinite(earliest) ? Math.max(0, earliest - now) : 0;
  }

  /** Ms from `now` until the earliest of `queues` that still sleeps wakes; Infinity if none sleeps. */
  untilFirstSleeperWakes(queues: readonly string[], now: number): number {
    let earliest = Number.POSITIVE_INFINITY;
    for (const q of queues) {
      const at = this.#wakeAt.get(q);
      if (at !== undefined && at > now) earliest = Math.min(earliest, at);
    }
    return earliest - now;
  }
}
