import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Backoff, type BackoffOptions } from "./backoff.js";
import {
  type HeartbeatRequestSchema,
  type HeartbeatResponse,
  type LeaseRef,
  LeaseRefSchema,
  LeaseState,
} from "./gen/taskq/v1/worker_pb.js";
import { errorFields, type Logger } from "./logger.js";
import { sleep, Wakeup } from "./sleep.js";
import { BidiStream, type OpenStream } from "./stream.js";

// Floor between beats, so a lease that looks already expired (clock skew) can't make a tight loop.
const MIN_BEAT_MS = 100;

/** What the worker learns from heartbeat answers, per lease key. */
export interface HeartbeatEvents {
  /** `deadlineMs` is undefined if the gateway left it out. */
  extended(key: string, deadlineMs: number | undefined): void;
  /** Already untracked when called: the lease is gone. */
  lost(key: string): void;
  /** The lease was extended too; keeps being heartbeated until untracked. */
  cancelRequested(key: string, deadlineMs: number | undefined): void;
  streamError(err: unknown): void;
  reconnected(): void;
}

export interface HeartbeatsOptions {
  open: OpenStream<MessageInitShape<typeof HeartbeatRequestSchema>, HeartbeatResponse>;
  /** Fixed beat interval in ms; undefined beats when a third of each lease has elapsed. */
  intervalMs: number | undefined;
  /** Requested lease length in ms, if any: bounds the beat time when the gateway clock runs ahead. */
  leaseMs: number | undefined;
  backoff: Partial<BackoffOptions>;
  logger: Logger;
  events: HeartbeatEvents;
}

interface Tracked {
  jobId: string;
  attempt: number;
  /** Built at the first beat: most leases of short jobs are settled before they ever need one. */
  ref: LeaseRef | undefined;
  /** Local time at which this lease wants its next beat. */
  dueAt: number;
}

/**
 * Keeps every active lease alive over ONE Heartbeat stream: each beat is one request listing all
 * tracked leases, sent when the earliest lease is due, with one beat outstanding at a time.
 */
export class Heartbeats {
  readonly #opts: HeartbeatsOptions;
  readonly #leases = new Map<string, Tracked>();
  readonly #changed = new Wakeup();
  readonly #stop = new AbortController();
  readonly #backoff: Backoff;
  #stream: BidiStream<MessageInitShape<typeof HeartbeatRequestSchema>, HeartbeatResponse> | undefined;
  #done: Promise<void> | undefined;
  /** While the loop waits: the time it wakes up at by itself; -Infinity while it is not waiting. */
  #sleepingUntil = Number.NEGATIVE_INFINITY;

  constructor(opts: HeartbeatsOptions) {
    this.#opts = opts;
    this.#backoff = new Backoff(opts.backoff);
  }

  start(): void {
    this.#done ??= this.#run();
  }

  /** Heartbeat `key` (job id + attempt) until untracked; `deadlineMs` is its current lease deadline. */
  track(key: string, jobId: string, attempt: number, deadlineMs: number): void {
    const dueAt = this.#dueAt(deadlineMs);
    this.#leases.set(key, { jobId, attempt, ref: undefined, dueAt });
    // The beat loop only needs waking when this lease is due before everything it already waits for.
    if (dueAt < this.#sleepingUntil) this.#changed.notify();
  }

  /** Stop heartbeating `key`: it is being settled, or is gone. */
  untrack(key: string): void {
    this.#leases.delete(key);
  }

  /** Close the stream and end the loop. Leases need nothing more: they are settled or given up. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#stream?.abort();
    await this.#done;
  }

  #dueAt(deadlineMs: number): number {
    const now = Date.now();
    const { intervalMs, leaseMs } = this.#opts;
    if (intervalMs !== undefined) return now + intervalMs;
    let remaining = deadlineMs - now;
    if (leaseMs !== undefined) remaining = Math.min(remaining, leaseMs);
    return now + Math.max(MIN_BEAT_MS, remaining / 3);
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      const stream = new BidiStream("heartbeat", this.#opts.open);
      this.#stream = stream;
      try {
        for (;;) {
          await this.#waitDue(signal);
          if (signal.aborted) break;
          const sent = [...this.#leases.entries()];
          stream.send({
            leases: sent.map(
              ([, t]) => (t.ref ??= create(LeaseRefSchema, { jobId: t.jobId, attempt: t.attempt })),
            ),
          });
          const res = await stream.next();
          this.#backoff.reset();
          this.#apply(sent, res);
        }
      } catch (err) {
        if (signal.aborted) break;
        this.#opts.events.streamError(err);
        this.#opts.logger.warn(errorFields(err), "taskq: heartbeat stream failed; reconnecting");
        await sleep(this.#backoff.next(), signal);
        if (!signal.aborted) this.#opts.events.reconnected();
      } finally {
        stream.abort();
      }
    }
  }

  /** Until the earliest tracked lease is due (or stop). Waits for a lease when there is none. */
  async #waitDue(signal: AbortSignal): Promise<void> {
    try {
      while (!signal.aborted) {
        let earliest = Number.POSITIVE_INFINITY;
        for (const t of this.#leases.values()) earliest = Math.min(earliest, t.dueAt);
        const wait = earliest - Date.now();
        if (wait <= 0) return;
        this.#sleepingUntil = earliest;
        await this.#changed.wait(wait, signal);
      }
    } finally {
      this.#sleepingUntil = Number.NEGATIVE_INFINITY;
    }
  }

  #apply(sent: Array<[string, Tracked]>, res: HeartbeatResponse): void {
    const { events, logger } = this.#opts;
    sent.forEach(([key, tracked], i) => {
      const status = res.leases[i];
      // Settled while the beat was out: whatever the answer, it no longer concerns us.
      if (this.#leases.get(key) !== tracked) return;
      if (!status) {
        tracked.dueAt = Date.now() + MIN_BEAT_MS;
        logger.warn({ jobId: tracked.jobId }, "taskq: heartbeat answer missing a lease");
        return;
      }
      const deadlineMs = status.leaseDeadline ? timestampMs(status.leaseDeadline) : undefined;
      if (status.state === LeaseState.LEASE_LOST) {
        this.#leases.delete(key);
        events.lost(key);
        return;
      }
      // Without a deadline in the answer, beat again soon rather than at once.
      tracked.dueAt = this.#dueAt(deadlineMs ?? Date.now() + 3 * MIN_BEAT_MS);
      if (status.state === LeaseState.EXTENDED) events.extended(key, deadlineMs);
      else if (status.state === LeaseState.CANCEL_REQUESTED) events.cancelRequested(key, deadlineMs);
      else logger.warn({ jobId: tracked.jobId, state: status.state }, "taskq: unknown lease state");
    });
  }
}
