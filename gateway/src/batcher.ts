/**
 * Coalesces items from many callers into one call of `run` per flush: a flush starts on the next
 * tick, or at once when `maxBatch` items wait; at most `maxInFlight` flushes run at a time. Results
 * map back to each caller by position.
 */
export class Batcher<I, O> {
  private pending: { items: I[]; resolve: (out: O[]) => void; reject: (err: unknown) => void }[] = [];
  private pendingItems = 0;
  private scheduled = false;
  private inFlight = 0;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 500,
    private readonly maxInFlight = 4,
  ) {}

  add(items: I[]): Promise<O[]> {
    if (items.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.pending.push({ items, resolve, reject });
      this.pendingItems += items.length;
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight >= this.maxInFlight || this.pending.length === 0) return;
    if (this.pendingItems >= this.maxBatch) {
      void this.flush();
    } else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        if (this.inFlight < this.maxInFlight) void this.flush();
      });
    }
  }

  private async flush(): Promise<void> {
    const callers: typeof this.pending = [];
    let n = 0;
    while (
      this.pending.length > 0 &&
      (n === 0 || n + (this.pending[0]?.items.length ?? 0) <= this.maxBatch)
    ) {
      const c = this.pending.shift();
      if (!c) break;
      callers.push(c);
      n += c.items.length;
    }
    this.pendingItems -= n;
    if (callers.length === 0) return;
    this.inFlight++;
    try {
      const out = await this.run(callers.flatMap((c) => c.items));
      let at = 0;
      for (const c of callers) {
        c.resolve(out.slice(at, at + c.items.length));
        at += c.items.length;
      }
    } catch (err) {
      for (const c of callers) c.reject(err);
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }
}
