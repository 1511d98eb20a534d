import { Code, ConnectError } from "@connectrpc/connect";
import { Backoff, type BackoffOptions } from "./backoff.js";
import { errorFields, type Logger } from "./logger.js";
import { sleep, Wakeup } from "./sleep.js";
import { BidiStream, type OpenStream } from "./stream.js";
import type { SettleAnswer, SettleEntry } from "./wire/settlement.js";

/**
 * Most settlements in one SettleRequest. The gateway answers one request of a stream at a time and
 * applies each in one statement (its settle batcher takes up to 500; the wire allows 1,000), so a
 * poll's worth of settles must fit in one request: at 100, a worker with concurrency 200 sent two
 * requests per poll, the second waited on the first, and the unanswered settles held back claiming
 * (measured: drains at concurrency 200 got ~30% faster at 500; below 100 nothing changes).
 */
export const MAX_SETTLE_BATCH = 500;

export interface SettlerOptions {
  open: OpenStream<SettleEntry[], SettleAnswer[]>;
  backoff: Partial<BackoffOptions>;
  logger: Logger;
  streamError(err: unknown): void;
  reconnected(): void;
}

interface Entry {
  settlement: SettleEntry;
  /** The gateway's answer, or undefined when the settle was given up. */
  resolve(result: SettleAnswer | undefined): void;
}

/** Settlements a poll carries (`Settler.carry`): its answer resolves them, or they go back in line. */
export interface Carried {
  readonly settlements: SettleEntry[];
  /** The poll's settle results, in order. Settlements without one are sent again. */
  answer(results: readonly SettleAnswer[]): void;
  /** The poll failed: they were not applied, and are sent again. */
  putBack(): void;
}

/**
 * Sends settlements over ONE Settle stream, batched: everything settled within one macrotask goes out
 * as one request (at most MAX_SETTLE_BATCH entries), requests are pipelined, and each response answers
 * the oldest unanswered request. When the stream fails, the unanswered settlements are re-sent on a new
 * stream with the same (job id, attempt): settles are idempotent on the gateway. An answered settle,
 * accepted or refused, is final and never re-sent.
 *
 * A poll about to go out takes what is queued instead (`carry`): the gateway applies it in the poll's
 * own statement and answers it with the poll, one request and one commit per cycle instead of two.
 */
export class Settler {
  readonly #opts: SettlerOptions;
  readonly #backoff: Backoff;
  readonly #changed = new Wakeup();
  readonly #stop = new AbortController();
  #pending: Entry[] = [];
  #inflight: Entry[][] = [];
  /** Taken by polls and not yet answered. */
  readonly #carried = new Set<Entry[]>();
  /** A gateway answered carried settlements with no results: it predates them; send them all here. */
  #carryUnsupported = false;
  #stream: BidiStream<SettleEntry[], SettleAnswer[]> | undefined;
  #flushQueued = false;
  #done: Promise<void> | undefined;

  constructor(opts: SettlerOptions) {
    this.#opts = opts;
    this.#backoff = new Backoff(opts.backoff);
  }

  start(): void {
    this.#done ??= this.#run();
  }

  /** Settles not yet answered. */
  get unanswered(): number {
    let n = this.#pending.length;
    for (const b of this.#inflight) n += b.length;
    for (const b of this.#carried) n += b.length;
    return n;
  }

  /** Queue one settlement; resolves with its result, or undefined if given up at `close()`. */
  settle(settlement: SettleEntry): Promise<SettleAnswer | undefined> {
    if (this.#stop.signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.#pending.push({ settlement, resolve });
      this.#queueFlush();
    });
  }

  /**
   * What is queued and not yet sent (at most MAX_SETTLE_BATCH), for the poll about to go out to carry;
   * undefined when nothing is, or the gateway does not take settlements on polls.
   */
  carry(): Carried | undefined {
    if (this.#pending.length === 0 || this.#carryUnsupported || this.#stop.signal.aborted) return undefined;
    const entries = this.#pending.splice(0, MAX_SETTLE_BATCH);
    this.#carried.add(entries);
    return {
      settlements: entries.map((e) => e.settlement),
      answer: (results) => {
        if (!this.#carried.delete(entries)) return; // given up at close()
        if (results.length === 0) this.#carryUnsupported = true;
        entries.forEach((e, i) => {
          const result = results[i];
          if (result) e.resolve(result);
          else this.#pending.push(e);
        });
        this.#queueFlush();
        this.#changed.notify();
      },
      putBack: () => {
        if (!this.#carried.delete(entries)) return;
        this.#pending = [...entries, ...this.#pending];
        this.#queueFlush();
      },
    };
  }

  /** Sends what is queued at the end of this macrotask (at once when a request's worth is queued). */
  #queueFlush(): void {
    if (this.#pending.length === 0) return;
    if (this.#pending.length >= MAX_SETTLE_BATCH) this.#flush();
    else if (!this.#flushQueued) {
      this.#flushQueued = true;
      setImmediate(() => {
        this.#flushQueued = false;
        this.#flush();
      });
    }
  }

  /**
   * Wait until every settle is answered or `deadlineMs` (epoch ms) passes, give up the rest (their
   * promises resolve undefined) and close the stream.
   */
  async close(deadlineMs: number): Promise<void> {
    while (this.unanswered > 0 && Date.now() < deadlineMs) {
      await this.#changed.wait(deadlineMs - Date.now());
    }
    this.#stop.abort();
    this.#stream?.abort();
    await this.#done;
    const left = [...this.#inflight.flat(), ...[...this.#carried].flat(), ...this.#pending];
    this.#pending = [];
    this.#inflight = [];
    this.#carried.clear();
    if (left.length > 0)
      this.#opts.logger.warn({ count: left.length }, "taskq: settles given up at shutdown");
    for (const e of left) e.resolve(undefined);
  }

  #flush(): void {
    const stream = this.#stream;
    if (!stream) {
      this.#changed.notify(); // the run loop opens a stream and flushes
      return;
    }
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, MAX_SETTLE_BATCH);
      this.#inflight.push(batch);
      stream.send(batch.map((e) => e.settlement));
    }
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      // Open the stream only when there is something to settle.
      if (this.#pending.length === 0) {
        await this.#changed.wait(Number.POSITIVE_INFINITY, signal);
        continue;
      }
      const stream = new BidiStream("settle", this.#opts.open);
      this.#stream = stream;
      this.#flush();
      try {
        for (;;) this.#answer(await stream.next());
      } catch (err) {
        this.#stream = undefined;
        stream.abort();
        if (!signal.aborted) this.#dropRefusedBatch(err);
        // Unanswered settlements go out again first, in their original order.
        this.#pending = [...this.#inflight.flat(), ...this.#pending];
        this.#inflight = [];
        if (signal.aborted) break;
        this.#opts.streamError(err);
        this.#opts.logger.warn(errorFields(err), "taskq: settle stream failed; reconnecting");
        await sleep(this.#backoff.next(), signal);
        if (!signal.aborted) this.#opts.reconnected();
      }
    }
  }

  /**
   * The gateway answers requests in order, so an INVALID_ARGUMENT is about the oldest unanswered batch.
   * Re-sending it would fail the stream forever: give it up instead (its leases expire and the jobs are
   * retried) and re-send the rest.
   */
  #dropRefusedBatch(err: unknown): void {
    if (!(err instanceof ConnectError) || err.code !== Code.InvalidArgument) return;
    const batch = this.#inflight.shift() ?? [];
    this.#opts.logger.error(
      { ...errorFields(err), jobIds: batch.map((e) => e.settlement.jobId) },
      "taskq: gateway refused a settle batch as invalid; giving it up",
    );
    for (const e of batch) e.resolve(undefined);
  }

  #answer(res: SettleAnswer[]): void {
    this.#backoff.reset();
    const batch = this.#inflight.shift();
    if (!batch) {
      this.#opts.logger.warn({}, "taskq: settle response without a request");
      return;
    }
    batch.forEach((e, i) => {
      const result = res[i];
      if (!result) this.#opts.logger.warn({ jobId: e.settlement.jobId }, "taskq: settle answer missing");
      e.resolve(result);
    });
    this.#changed.notify();
  }
}
