/**
 * How many claimed jobs a worker holds ahead of its free slots (its buffer), poll by poll.
 *
 * A poll's fixed cost matters only when jobs are short next to its round trip, and exactly then a
 * buffered job waits less than the round trip it saves. When jobs run long, a buffer only keeps work
 * from idle workers. So the adaptive look-ahead holds about as many jobs as the slots start within one
 * poll round trip (`concurrency × round trip / job duration`), from smoothed measurements of both, and
 * none once jobs run longer than a few round trips. Until it has measured both it holds none.
 */
export interface LookAhead {
  /** True when the size follows measurements (and buffered jobs are given back when it was wrong). */
  readonly adaptive: boolean;
  /** Jobs to hold beyond the slots now. */
  size(): number;
  /** A handler ran this long, ms. */
  ran(ms: number): void;
  /** A poll that was not kept waiting for work was answered this long after it was sent, ms. */
  polled(ms: number): void;
  /**
   * No slot freed for `ms` while jobs waited in the buffer: the jobs running now are long. Returns true
   * when that is long enough that the buffer should be given back (and then holds none for a while).
   */
  stalled(ms: number): boolean;
}

/** The `prefetch` option of a Worker: a fixed buffer, or one sized from measurements. */
export type PrefetchOption =
  | number
  | "auto"
  | {
      /** Size the buffer from measurements. */
      auto: true;
      /** Most jobs to hold ahead, 0 to 10000. Default 10 × concurrency, at least 500, at most 1000. */
      max?: number | undefined;
    };

/** Jobs at most in an adaptive buffer by default: enough for a busy worker of no-op jobs to reach its fast path. */
export function defaultLookAheadMax(concurrency: number): number {
  return Math.min(1000, Math.max(500, 10 * concurrency));
}

/** A buffer of a fixed size (`prefetch: N`). */
export function fixedLookAhead(n: number): LookAhead {
  return { adaptive: false, size: () => n, ran() {}, polled() {}, stalled: () => false };
}

/** Jobs longer than this many poll round trips get no look-ahead. */
export const LONG_JOB_ROUND_TRIPS = 4;
/** The shortest stall that gives a buffer back, ms: event-loop hiccups and GC pauses are not long jobs. */
export const STALL_FLOOR_MS = 20;
// Weight of each new sample in the smoothed figures: a few dozen jobs or polls make an estimate.
const WEIGHT = 0.1;
// A handler's measured time never counts as less than this, ms (a no-op's timing is noise).
const SHORTEST_JOB_MS = 0.01;

/** The adaptive buffer (`prefetch: "auto"`), between 0 and `max` jobs. */
export class AdaptiveLookAhead implements LookAhead {
  readonly adaptive = true;
  #jobMs: number | undefined;
  #roundTripMs: number | undefined;
  // Set by a stall, cleared when a job ends: slower polls must not grow a buffer while the long jobs run.
  #stalled = false;

  constructor(
    private readonly concurrency: number,
    private readonly max: number,
  ) {}

  size(): number {
    const job = this.#jobMs;
    const rtt = this.#roundTripMs;
    if (this.#stalled || job === undefined || rtt === undefined || job > LONG_JOB_ROUND_TRIPS * rtt) return 0;
    return Math.min(this.max, Math.ceil((this.concurrency * rtt) / Math.max(job, SHORTEST_JOB_MS)));
  }

  ran(ms: number): void {
    this.#stalled = false;
    this.#jobMs = smooth(this.#jobMs, ms);
  }

  polled(ms: number): void {
    this.#roundTripMs = smooth(this.#roundTripMs, ms);
  }

  stalled(ms: number): boolean {
    const rtt = this.#roundTripMs;
    if (rtt === undefined || ms < Math.max(STALL_FLOOR_MS, LONG_JOB_ROUND_TRIPS * rtt)) return false;
    // The youngest running job has run at least this long: hold none until one ends, and then until
    // shorter ones bring the estimate down.
    this.#jobMs = Math.max(this.#jobMs ?? 0, ms);
    this.#stalled = true;
    return true;
  }

  /** The smoothed figures, for tests and snapshots. */
  get estimates(): { jobMs: number | undefined; roundTripMs: number | undefined } {
    return { jobMs: this.#jobMs, roundTripMs: this.#roundTripMs };
  }
}

function smooth(prev: number | undefined, sample: number): number {
  return prev === undefined ? sample : prev + WEIGHT * (sample - prev);
}

/** The look-ahead a Worker's `prefetch` option asks for. */
export function lookAheadFor(option: PrefetchOption | undefined, concurrency: number): LookAhead {
  if (typeof option === "number") return fixedLookAhead(option);
  const max = typeof option === "object" ? option.max : undefined;
  return new AdaptiveLookAhead(concurrency, max ?? defaultLookAheadMax(concurrency));
}
