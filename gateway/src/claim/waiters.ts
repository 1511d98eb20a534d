/**
 * Long polls parked per queue, woken when a job becomes ready there (the longest parked first, a few at
 * a time: see `wake`). A poll arms its wake-up before it looks for work, so a notification that lands
 * between the look and the wait is never lost.
 *
 * A parked poll that offers itself (`arm(queues, offer)`) can also be taken by an enqueue on this
 * gateway, which claims for it in its own statement and hands it the answer (see HandOff). While taken
 * it ignores wakes and its deadline (both are kept for if the enqueue gives it nothing), so it never
 * claims on its own at the same time; only its caller going away ends it.
 */
export class Waiters<Offer = unknown, Answer = unknown> {
  constructor(readonly timers: Timers = realTimers) {}

  private readonly byQueue = new Map<string, Set<Parked<Offer, Answer>>>();
  /**
   * Wakes and settings changes counted per bucket of queue names (a fixed number, however many queues
   * there are), and those of every queue: see `stamp`. Two queues sharing a bucket only make a stamp
   * change more often.
   */
  private readonly wakes = new Float64Array(WAKE_BUCKETS);
  private wakeAlls = 0;

  /** Registers interest in the queues; `wait` resolves on a wake, the deadline, abort, or an answer. */
  arm(
    queues: readonly string[],
    offer?: Offer,
  ): {
    wait: (deadlineMs: number, signal: AbortSignal) => Promise<void>;
    /** What an enqueue handed this poll while it waited, if anything. */
    answer: () => Answer | undefined;
    disarm: () => void;
    /** Whether a wake reached it (it claims for that job, or passes the wake on). */
    woken: () => boolean;
  } {
    const entry = new Parked<Offer, Answer>(offer, this.timers);
    for (const q of queues) {
      const set = this.byQueue.get(q) ?? new Set();
      this.byQueue.set(q, set);
      set.add(entry);
    }
    const disarm = () => {
      for (const q of queues) {
        const set = this.byQueue.get(q);
        set?.delete(entry);
        if (set?.size === 0) this.byQueue.delete(q);
      }
    };
    return {
      wait: (deadlineMs, signal) => entry.wait(deadlineMs, signal),
      answer: () => entry.answer,
      disarm,
      woken: () => entry.woken,
    };
  }

  /**
   * A job became ready on the queue. Every poll looking for work there now (armed, not yet parked) is
   * woken, and of those parked, the WAKE_AT_ONCE that waited longest: waking every parked poll for one
   * job made a fleet of idle workers claim thousands of times for it. A woken poll that comes back
   * with a full answer wakes as many more (`Claimer`), so a backlog still reaches every poll it needs,
   * and one that goes away without claiming passes its wake on (`passOn`).
   */
  wake(queue: string): void {
    this.#count(queue);
    let parked = 0;
    for (const w of this.byQueue.get(queue) ?? []) {
      if (!w.waiting) w.wake();
      else if (parked++ < WAKE_AT_ONCE) w.wake();
    }
  }

  /** Wakes everyone, e.g. after the notification connection was lost and notifications may be missing. */
  wakeAll(): void {
    this.wakeAlls++;
    for (const set of this.byQueue.values()) for (const w of set) w.wake();
  }

  /**
   * The queue's settings changed (on any gateway): a claim that read the ones replaced may have taken
   * fewer jobs than were ready (a cap it did not know of), so stamps taken before no longer hold.
   */
  settingsChanged(queue: string): void {
    this.#count(queue);
  }

  /** Settings that apply to every queue changed (flow limits): as settingsChanged, for all. */
  allSettingsChanged(): void {
    this.wakeAlls++;
  }

  /**
   * A number that changes whenever one of `queues` is woken (or everyone is) or its settings change,
   * and only grows: equal stamps taken at two moments mean no job was announced ready on these queues
   * in between, and their settings stayed the same.
   */
  stamp(queues: readonly string[]): number {
    let n = this.wakeAlls;
    for (const q of queues) n += this.wakes[bucketOf(q)] ?? 0;
    return n;
  }

  #count(queue: string): void {
    const b = bucketOf(queue);
    this.wakes[b] = (this.wakes[b] ?? 0) + 1;
  }

  /**
   * Takes polls parked now on any of `queues` that offered themselves, oldest first, as `choose` says
   * of each: each taken poll is the caller's to `give` an answer to or to `giveBack`, and meanwhile
   * nothing else ends it but its own abort.
   */
  take(
    queues: readonly string[],
    choose: (offer: Offer) => "take" | "skip" | "stop",
  ): Taken<Offer, Answer>[] {
    const taken: Taken<Offer, Answer>[] = [];
    for (const q of queues)
      for (const w of this.byQueue.get(q) ?? []) {
        if (!w.waiting || w.offer === undefined) continue;
        const choice = choose(w.offer);
        if (choice === "stop") return taken;
        if (choice === "take" && w.take()) taken.push(w);
      }
    return taken;
  }

  /** Polls waiting now (armed and parked, not yet looking or answered). */
  get parked(): number {
    const polls = new Set<Parked<Offer, Answer>>();
    for (const set of this.byQueue.values()) for (const w of set) if (w.waiting) polls.add(w);
    return polls.size;
  }

  get size(): number {
    let n = 0;
    for (const set of this.byQueue.values()) n += set.size;
    return n;
  }
}

/** A parked poll taken by an enqueue. */
export interface Taken<Offer, Answer> {
  readonly offer: Offer;
  /** Hands the poll its answer; false when it no longer waits (its caller went away). */
  give(answer: Answer): boolean;
  /** Parks it again, woken at once if a wake or its deadline came meanwhile. */
  giveBack(): void;
}

class Parked<Offer, Answer> implements Taken<Offer, Answer> {
  answer: Answer | undefined;
  #state: "armed" | "waiting" | "taken" | "done" = "armed";
  #woken = false;
  #deadlineMs = Number.POSITIVE_INFINITY;
  #finish: (() => void) | undefined;

  constructor(
    private readonly offered: Offer | undefined,
    private readonly timers: Timers,
  ) {}

  get waiting(): boolean {
    return this.#state === "waiting";
  }

  get woken(): boolean {
    return this.#woken;
  }

  get offer(): Offer {
    return this.offered as Offer;
  }

  wait(deadlineMs: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((done) => {
      if (this.#woken || signal.aborted || deadlineMs <= this.timers.now()) {
        this.#state = "done";
        return done();
      }
      this.#deadlineMs = deadlineMs;
      this.#state = "waiting";
      const cancel = this.timers.after(deadlineMs - this.timers.now(), () => this.#due());
      const finish = () => {
        this.#state = "done";
        cancel();
        signal.removeEventListener("abort", finish);
        done();
      };
      signal.addEventListener("abort", finish, { once: true });
      this.#finish = finish;
    });
  }

  wake(): void {
    this.#woken = true;
    if (this.#state === "waiting") this.#finish?.();
  }

  take(): boolean {
    if (this.offered === undefined || this.#state !== "waiting") return false;
    this.#state = "taken";
    return true;
  }

  give(answer: Answer): boolean {
    if (this.#state !== "taken") return false;
    this.answer = answer;
    this.#finish?.();
    return true;
  }

  giveBack(): void {
    if (this.#state !== "taken") return;
    this.#state = "waiting";
    if (this.#woken || this.#deadlineMs <= this.timers.now()) this.#finish?.();
  }

  #due(): void {
    // A taken poll keeps waiting for its answer; giveBack ends it if the deadline passed meanwhile.
    if (this.#state === "waiting") this.#finish?.();
  }
}

/** The clock parked polls wait on: this process's, or a test's. */
export interface Timers {
  now(): number;
  /** Calls `fn` after `ms`; the function returned cancels it. */
  after(ms: number, fn: () => void): () => void;
}

export const realTimers: Timers = {
  now: Date.now,
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};

const WAKE_BUCKETS = 1024;

/** Parked polls one wake-up reaches on a queue (more follow a full answer). */
export const WAKE_AT_ONCE = 16;

/** FNV-1a over the name's UTF-16 code units, to a bucket of `Waiters.wakes`. */
function bucketOf(queue: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < queue.length; i++) h = Math.imul(h ^ queue.charCodeAt(i), 0x01000193);
  return (h >>> 0) % WAKE_BUCKETS;
}
