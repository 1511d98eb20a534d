import { create, toJsonString } from "@bufbuild/protobuf";
import { durationMs } from "@bufbuild/protobuf/wkt";
import { JobInstructionSchema, type ScriptedJob } from "@taskq/sdk/conformance";

/** A scripted job waiting to be handed out. */
interface Pending {
  job: ScriptedJob;
  queue: string;
  /** The attempt it goes out with next. */
  attempt: number;
  /** Its place in the script: the order jobs go out in. */
  place: number;
  /** Ms after Ready at which it becomes claimable. */
  readyAfterMs: number;
  payload: Uint8Array;
}

const utf8 = new TextEncoder();

/**
 * The reference gateway's queue: scripted jobs become claimable `ready_after` past the worker's Ready
 * and go out in script order, each once, unless given back (Released) for its next attempt.
 */
export class JobPool {
  readonly #pending: Pending[];
  #taken: Pending[] = [];
  #readyAt: number | undefined;
  readonly #wakers = new Set<() => void>();

  constructor(jobs: readonly ScriptedJob[], defaultQueue: string) {
    this.#pending = jobs.map((job, place) => ({
      job,
      queue: job.queue || defaultQueue,
      attempt: job.attempt || 1,
      place,
      readyAfterMs: job.readyAfter ? durationMs(job.readyAfter) : 0,
      payload: utf8.encode(
        toJsonString(JobInstructionSchema, job.instruction ?? create(JobInstructionSchema)),
      ),
    }));
  }

  /**
   * The worker said Ready at `t` (trace clock); jobs with a ready_after count from here. A poll parked
   * before (a worker may poll as it says Ready) wakes to learn when they become claimable.
   */
  markReady(t: number): void {
    if (this.#readyAt !== undefined) return;
    this.#readyAt = t;
    this.#wake();
  }

  /** Take up to `max` claimable jobs of `queues` at `now`. */
  take(
    queues: readonly string[],
    max: number,
    now: number,
  ): Array<{ job: ScriptedJob; queue: string; attempt: number; payload: Uint8Array }> {
    const out: Pending[] = [];
    for (const p of this.#pending) {
      if (out.length >= max) break;
      if (queues.includes(p.queue) && this.#isReady(p, now)) out.push(p);
    }
    for (const p of out) this.#pending.splice(this.#pending.indexOf(p), 1);
    this.#taken.push(...out);
    return out;
  }

  /** Jobs taken for an answer that never reached the worker: claimable again, first in line. */
  putBack(ids: readonly string[]): void {
    const back = this.#taken.filter((p) => ids.includes(p.job.id));
    this.#taken = this.#taken.filter((p) => !ids.includes(p.job.id));
    this.#pending.unshift(...back);
    if (back.length > 0) this.#wake();
  }

  /**
   * A job given back unstarted (Released): claimable again at once, in its place in the script, with the
   * next attempt (the released one stays burned, for fencing). Parked long polls wake.
   */
  requeue(id: string): void {
    const p = this.#taken.find((x) => x.job.id === id);
    if (!p) return;
    this.#taken = this.#taken.filter((x) => x !== p);
    p.attempt++;
    const at = this.#pending.findIndex((x) => x.place > p.place);
    this.#pending.splice(at < 0 ? this.#pending.length : at, 0, p);
    this.#wake();
  }

  /**
   * Calls `wake` when a job becomes claimable again (put back or requeued), or when Ready starts the
   * clock of ready_after; returns the unsubscribe.
   */
  onRequeue(wake: () => void): () => void {
    this.#wakers.add(wake);
    return () => this.#wakers.delete(wake);
  }

  /** Ms from `now` until the next job of `queues` becomes claimable; Infinity if none will. */
  nextReadyIn(queues: readonly string[], now: number): number {
    let best = Number.POSITIVE_INFINITY;
    for (const p of this.#pending) {
      if (!queues.includes(p.queue)) continue;
      if (p.readyAfterMs === 0) return 0;
      if (this.#readyAt !== undefined)
        best = Math.min(best, Math.max(0, this.#readyAt + p.readyAfterMs - now));
    }
    return best;
  }

  #wake(): void {
    for (const w of [...this.#wakers]) w();
  }

  #isReady(p: Pending, now: number): boolean {
    return p.readyAfterMs === 0 || (this.#readyAt !== undefined && now >= this.#readyAt + p.readyAfterMs);
  }
}
