/**
 * Long polls parked per queue, woken when a job becomes ready there. A poll arms its wake-up before
 * it looks for work, so a notification that lands between the look and the wait is never lost.
 */
export class Waiters {
  private readonly byQueue = new Map<string, Set<() => void>>();

  /** Registers interest in the queues; `wait` resolves on a wake, the deadline, or abort. */
  arm(queues: readonly string[]): {
    wait: (deadlineMs: number, signal: AbortSignal) => Promise<void>;
    disarm: () => void;
  } {
    let woken = false;
    let resolve: (() => void) | undefined;
    const wake = () => {
      woken = true;
      resolve?.();
    };
    for (const q of queues) {
      const set = this.byQueue.get(q) ?? new Set();
      this.byQueue.set(q, set);
      set.add(wake);
    }
    const disarm = () => {
      for (const q of queues) {
        const set = this.byQueue.get(q);
        set?.delete(wake);
        if (set?.size === 0) this.byQueue.delete(q);
      }
    };
    const wait = (deadlineMs: number, signal: AbortSignal) =>
      new Promise<void>((done) => {
        if (woken || signal.aborted || deadlineMs <= Date.now()) return done();
        const timer = setTimeout(finish, deadlineMs - Date.now());
        signal.addEventListener("abort", finish, { once: true });
        resolve = finish;
        function finish() {
          clearTimeout(timer);
          signal.removeEventListener("abort", finish);
          done();
        }
      });
    return { wait, disarm };
  }

  wake(queue: string): void {
    for (const w of this.byQueue.get(queue) ?? []) w();
  }

  /** Wakes everyone, e.g. after the notification connection was lost and notifications may be missing. */
  wakeAll(): void {
    for (const set of this.byQueue.values()) for (const w of set) w();
  }

  get size(): number {
    let n = 0;
    for (const set of this.byQueue.values()) n += set.size;
    return n;
  }
}
