import type { Verdict } from "../gates/verdict.js";
import type { Logger } from "../log.js";
import type { QueueStore } from "../store/queue-store.js";

/**
 * Counts the throttled verdicts this gateway answers and adds them to the fleet-wide per-minute counts
 * in Postgres (taskq.queue_throttled) every `intervalMs`, in one statement: a declined poll costs a map
 * increment, not a write. A failed flush keeps its counts for the next one.
 */
export class ThrottledTally {
  readonly #counts = new Map<string, { queue: string; reason: string; count: number }>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly queues: QueueStore,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  add(verdicts: readonly Verdict[]): void {
    for (const v of verdicts) this.#bump(v.queue, v.reason, 1);
  }

  #bump(queue: string, reason: string, n: number): void {
    const key = `${queue}\n${reason}`;
    const entry = this.#counts.get(key);
    if (entry) entry.count += n;
    else this.#counts.set(key, { queue, reason, count: n });
  }

  start(): void {
    this.#timer = setInterval(() => void this.flush(), this.intervalMs);
    this.#timer.unref();
  }

  /** Writes what was counted since the last flush; one flush at a time. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      const batch = [...this.#counts.values()];
      if (batch.length === 0) return;
      this.#counts.clear();
      try {
        await this.queues.throttledAdd(batch);
      } catch (err) {
        // Put them back: counts are only late, never lost, while Postgres is away.
        for (const t of batch) this.#bump(t.queue, t.reason, t.count);
        this.log.warn({ err: (err as Error).message }, "could not record throttled verdicts; will retry");
      }
    });
    return this.#flushing;
  }

  /** Stops the timer and writes the rest. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }
}
