import { durationFromMs, durationMs } from "@bufbuild/protobuf/wkt";
import { Backoff, type BackoffOptions } from "./backoff.js";
import { type ThrottledVerdict, ThrottleReason } from "./gen/taskq/v1/job_pb.js";
import { errorFields, type Logger } from "./logger.js";
import type { LookAhead } from "./look-ahead.js";
import { QueueSleep } from "./queue-sleep.js";
import type { Carried } from "./settler.js";
import { sleep } from "./sleep.js";
import type { Slots } from "./slots.js";
import { BidiStream, type OpenStream } from "./stream.js";
import type { ClaimedJob } from "./wire/claimed-job.js";
import type { ClaimAnswer, ClaimAsk } from "./wire/worker-rpc.js";

/** The most jobs one poll may ask for (the gateway's max_jobs limit). */
const MAX_POLL_JOBS = 1000;

export interface PollerOptions {
  open: OpenStream<ClaimAsk, ClaimAnswer>;
  queues: readonly string[];
  workerId: string;
  /** How many jobs to hold beyond the slots; each poll tells the gateway its size then. */
  lookAhead: LookAhead;
  leaseMs: number | undefined;
  maxWaitMs: number;
  slots: Slots;
  /** With fewer than a quarter of the slots free, how long to wait for more before polling, ms. */
  pollBatchWaitMs: number;
  /** Settlements for the next poll to carry (see Settler.carry); none when absent. */
  carry?: () => Carried | undefined;
  backoff: Partial<BackoffOptions>;
  logger: Logger;
  /** An answer's claimed jobs (each already holding one slot) and verdicts; not called when it has neither. */
  jobs(jobs: ClaimedJob[], verdicts: readonly ThrottledVerdict[]): void;
  /** A verdict, by reason name (`PAUSED`, …; `UNSPECIFIED` for an unknown number). */
  throttled(reason: string, verdict: ThrottledVerdict): void;
  /** A poll answered, whatever it carried (the drain waits on this); `full`: it brought all it asked for. */
  answered(full: boolean): void;
  streamError(err: unknown): void;
  reconnected(): void;
}

/** The name a verdict is counted under. */
export function reasonName(reason: number): string {
  const name = ThrottleReason[reason];
  return typeof name === "string" ? name : "UNSPECIFIED";
}

/**
 * The claim loop over ONE Claim stream. It reserves the free places (handler slots and the buffer's
 * room), then sends one poll for that many jobs from the queues not sleeping on a verdict, and sends the
 * next poll only after this one is answered — the gateway long-polls, so a verdict with retry_after 0
 * still cannot make a tight loop.
 *
 * Each poll says its concurrency and its buffer's size (`prefetch`): the gateway then hands a queue
 * whose gates count claimed jobs (max_running, a breaker, a throttle, a claim rate) only as
 * many as the free handler slots, first in the answer, so such jobs start at once and are never
 * buffered. A poll with no free handler slot only tops up the buffer: it does not wait for work, and
 * after an empty answer the next poll waits for a free handler slot. An adaptive buffer is topped up
 * only while work is queued (the last answer brought all it asked for): a worker keeping up with its
 * queue asks for its free slots alone, so a trickle of jobs meets claims no larger than a plain
 * worker's.
 */
export class Poller {
  readonly #opts: PollerOptions;
  /** Queues sleeping on a verdict, each until its retry_after. */
  readonly #sleep = new QueueSleep();
  readonly #backoff: Backoff;
  readonly #stop = new AbortController();
  #stream: BidiStream<ClaimAsk, ClaimAnswer> | undefined;
  #polling = false;
  /** The last answer brought all it asked for: work is queued, so the next poll will likely claim. */
  #busy = false;
  /** The last poll only topped up the buffer and found nothing: wait for a free handler slot. */
  #dry = false;
  #done: Promise<void> | undefined;

  constructor(opts: PollerOptions) {
    this.#opts = opts;
    this.#backoff = new Backoff(opts.backoff);
  }

  /** A poll is out and unanswered. */
  get polling(): boolean {
    return this.#polling;
  }

  start(): void {
    this.#done ??= this.#run();
  }

  /** Resolves when the loop has ended. */
  get done(): Promise<void> {
    return this.#done ?? Promise.resolve();
  }

  /**
   * Poll no more and half-close the stream. The gateway answers an outstanding poll at once on the
   * half-close, and that answer (jobs included) is still delivered.
   */
  drain(): void {
    this.#stop.abort();
    this.#stream?.halfClose();
  }

  /**
   * Cancel the stream, outstanding poll included: the last resort of a drain whose poll the peer does
   * not answer promptly after the half-close. The gateway puts back at once any job it claimed for a
   * poll whose answer it could not send; one sent just as the reset arrived waits for lease expiry.
   */
  abort(): void {
    this.drain();
    this.#stream?.abort();
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    const { slots, logger } = this.#opts;
    while (!signal.aborted) {
      const stream = new BidiStream("claim", this.#opts.open);
      this.#stream = stream;
      try {
        for (;;) {
          if (!(await slots.waitFree(signal))) break;
          // A busy worker frees its slots one job at a time; polling for each alone would cost the
          // gateway and Postgres a claim per job. Waiting a moment for a batch keeps claims large.
          const batch = Math.ceil(slots.capacity / 4);
          if (!(await slots.waitFreeAtLeast(batch, this.#opts.pollBatchWaitMs, signal))) break;
          // An adaptive buffer fills only while work is queued (the last answer was full): otherwise
          // a poll asks for its free handler slots alone, as a worker without a buffer would.
          const fillBuffer = this.#busy || !this.#opts.lookAhead.adaptive;
          if ((this.#dry || !fillBuffer) && !(await slots.waitStartable(signal))) break;
          const queues = await this.#awakeQueues(signal);
          if (!queues) break;
          // The gateway reads max_jobs − prefetch as the free handler slots (see the class comment).
          const ahead = fillBuffer ? slots.ahead() : 0;
          const n = Math.min(ahead > 0 ? slots.free : slots.startable, MAX_POLL_JOBS);
          // The gateway refuses a poll for no jobs: should the slots be gone meanwhile, wait again.
          if (n < 1) continue;
          const startable = Math.max(0, n - ahead);
          slots.acquire(n);
          this.#polling = true;
          let res: ClaimAnswer;
          // While work is queued, the jobs finished since the last poll are settled by this one (in its
          // statement). Otherwise the poll may park: their answers would wait on it, so the Settle
          // stream takes them, and a parked poll can be handed jobs by an enqueue.
          const carried = this.#busy ? this.#opts.carry?.() : undefined;
          // Its answer's time is the poll's own round trip only if it was not kept waiting for work:
          // a poll that may not wait, or one sent into a backlog (the last answer was full) that
          // came back full.
          const timed = this.#busy || startable === 0;
          const sentAt = performance.now();
          try {
            stream.send({ ...this.#poll(queues, n, ahead), settlements: carried?.settlements });
            res = await stream.next();
          } catch (err) {
            slots.release(n);
            carried?.putBack();
            throw err;
          } finally {
            this.#polling = false;
          }
          this.#backoff.reset();
          carried?.answer(res.settled);
          this.#busy = res.jobs.length >= n;
          if (timed && this.#busy) this.#opts.lookAhead.polled(performance.now() - sentAt);
          this.#dry = startable === 0 && res.jobs.length === 0;
          this.#handle(res, n);
        }
        stream.halfClose();
        break;
      } catch (err) {
        if (signal.aborted) break;
        this.#opts.streamError(err);
        logger.warn(errorFields(err), "taskq: claim stream failed; reconnecting");
        await sleep(this.#backoff.next(), signal);
        if (!signal.aborted) this.#opts.reconnected();
      } finally {
        this.#busy = false;
        this.#dry = false;
        stream.abort();
      }
    }
  }

  /** `ahead`: the buffer's size; `maxJobs` beyond it are free handler slots. */
  #poll(queues: string[], maxJobs: number, ahead: number): ClaimAsk {
    const { workerId, leaseMs, maxWaitMs, slots } = this.#opts;
    // A long poll of the awake queues must not outlast a sleeping queue's retry_after: that queue is
    // due for a poll then, and this stream carries one poll at a time. A poll for the buffer alone
    // does not wait: a handler slot that frees meanwhile would wait on it.
    const untilWake = this.#sleep.untilFirstSleeperWakes(this.#opts.queues, Date.now());
    const waitMs = maxJobs > ahead ? Math.min(maxWaitMs, Math.ceil(untilWake)) : 0;
    return {
      queues,
      maxJobs,
      maxWait: durationFromMs(waitMs),
      workerId,
      leaseDuration: leaseMs === undefined ? undefined : durationFromMs(leaseMs),
      concurrency: slots.concurrency,
      prefetch: ahead,
    };
  }

  /** The queues to poll now, waiting while all sleep; undefined once draining. */
  async #awakeQueues(signal: AbortSignal): Promise<string[] | undefined> {
    const { queues } = this.#opts;
    while (!signal.aborted) {
      const now = Date.now();
      const awake = this.#sleep.awake(queues, now);
      if (awake.length > 0) return awake;
      await sleep(this.#sleep.nextWakeIn(queues, now), signal);
    }
    return undefined;
  }

  #handle(res: ClaimAnswer, reserved: number): void {
    const { slots, logger } = this.#opts;
    const now = Date.now();
    for (const v of res.throttled) {
      // A verdict is not an error: sleep that queue exactly retry_after, count it, keep the backoff.
      this.#sleep.sleep(v.queue, v.retryAfter ? durationMs(v.retryAfter) : 0, now);
      this.#opts.throttled(reasonName(v.reason), v);
    }
    const got = res.jobs.length;
    if (got > reserved) {
      logger.warn({ asked: reserved, got }, "taskq: gateway handed out more jobs than asked for");
      slots.acquire(got - reserved);
    } else {
      slots.release(reserved - got);
    }
    this.#opts.answered(this.#busy);
    if (got > 0 || res.throttled.length > 0) this.#opts.jobs(res.jobs, res.throttled);
  }
}
