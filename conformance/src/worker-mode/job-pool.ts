import { create, toJsonString } from "@bufbuild/protobuf";
import { durationMs } from "@bufbuild/protobuf/wkt";
import { JobInstructionSchema, type ScriptedJob } from "@taskq/sdk/conformance";

/** A scripted job waiting to be handed out. */
interface Pending {
  job: ScriptedJob;
  queue: string;
  /** Ms after Ready at which it becomes claimable. */
  readyAfterMs: number;
  payload: Uint8Array;
}

const utf8 = new TextEncoder();

/**
 * The reference gateway's queue: scripted jobs become claimable `ready_after` past the worker's Ready
 * and go out in script order, each once.
 */
export class JobPool {
  readonly #pending: Pending[];
  #taken: Pending[] = [];
  #readyAt: number | undefined;

  constructor(jobs: readonly ScriptedJob[], defaultQueue: string) {
    this.#pending = jobs.map((job) => ({
      job,
      queue: job.queue || defaultQueue,
      readyAfterMs: job.readyAfter ? durationMs(job.readyAfter) : 0,
      payload: utf8.encode(
        toJsonString(JobInstructionSchema, job.instruction ?? create(JobInstructionSchema)),
      ),
    }));
  }

  /** The worker said Ready at `t` (trace clock); jobs with a ready_after count from here. */
  markReady(t: number): void {
    this.#readyAt ??= t;
  }

  /** Take up to `max` claimable jobs of `queues` at `now`. */
  take(
    queues: readonly string[],
    max: number,
    now: number,
  ): Array<{ job: ScriptedJob; queue: string; payload: Uint8Array }> {
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

  #isReady(p: Pending, now: number): boolean {
    return p.readyAfterMs === 0 || (this.#readyAt !== undefined && now >= this.#readyAt + p.readyAfterMs);
  }
}
