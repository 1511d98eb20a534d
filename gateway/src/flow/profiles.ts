import type { FlowLimitRow, QueueSettings, QueueStore } from "../store/queue-store.js";

/**
 * Each gateway's copy of queue settings and flow limits, read on first use and dropped when a verb
 * notifies a change (on any gateway), so a queue that sets nothing costs nothing per claim.
 */
export class Profiles {
  private readonly queues = new Map<string, QueueSettings | null>();
  private flowLimits: Map<string, FlowLimitRow> | undefined;
  // Bumped by every invalidation, so a read that raced with one is not cached.
  private generation = 0;

  constructor(private readonly store: QueueStore) {}

  /** Settings of each queue; null for a queue with no settings (never gated). */
  async queueSettings(names: readonly string[]): Promise<Map<string, QueueSettings | null>> {
    const missing = names.filter((n) => !this.queues.has(n));
    if (missing.length > 0) {
      const gen = this.generation;
      const found = await this.store.queuesGet(missing);
      if (gen === this.generation) for (const n of missing) this.queues.set(n, found.get(n) ?? null);
      return new Map(names.map((n) => [n, this.queues.get(n) ?? found.get(n) ?? null]));
    }
    return new Map(names.map((n) => [n, this.queues.get(n) ?? null]));
  }

  async flowLimitsAll(): Promise<Map<string, FlowLimitRow>> {
    if (this.flowLimits) return this.flowLimits;
    const gen = this.generation;
    const rows = new Map((await this.store.flowLimitsList()).map((r) => [r.flowKey, r]));
    if (gen === this.generation) this.flowLimits = rows;
    return rows;
  }

  queueChanged(name: string): void {
    this.generation++;
    this.queues.delete(name);
  }

  flowLimitChanged(): void {
    this.generation++;
    this.flowLimits = undefined;
  }

  /** Forget everything (the notification connection was lost, so changes may have been missed). */
  clear(): void {
    this.generation++;
    this.queues.clear();
    this.flowLimits = undefined;
  }
}
