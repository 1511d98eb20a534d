import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { pollsOf } from "./polls.js";

/** A Claim stream's requests as the test sends them: `send` a poll, `halfClose`, or `fail` the read. */
function requestStream<T>() {
  const queued: IteratorResult<T>[] = [];
  let waiting: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  let failure: unknown;
  const push = (r: IteratorResult<T>) => {
    if (waiting) {
      waiting.resolve(r);
      waiting = undefined;
    } else queued.push(r);
  };
  const requests: AsyncIterable<T> = {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        const r = queued.shift();
        if (r) return Promise.resolve(r);
        if (failure !== undefined) return Promise.reject(failure);
        return new Promise((resolve, reject) => {
          waiting = { resolve, reject };
        });
      },
    }),
  };
  return {
    requests,
    send: (value: T) => push({ value, done: false }),
    halfClose: () => push({ value: undefined, done: true }),
    fail: (err: unknown) => {
      failure = err;
      waiting?.reject(err);
      waiting = undefined;
    },
  };
}

/** Dependant signals Node's AbortSignal.any registered on `signal` (its internal bookkeeping). */
function dependants(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === "kDependantSignals");
  const set = key === undefined ? undefined : (signal as unknown as Record<symbol, Set<unknown>>)[key];
  return set?.size ?? 0;
}

describe("pollsOf", () => {
  it("keeps a poll's signal quiet while the stream carries the next poll", async () => {
    const s = requestStream<number>();
    const polls = pollsOf(s.requests, new AbortController().signal);
    s.send(1);
    const first = await polls.next();
    s.send(2);
    const second = await polls.next();
    expect(first.value?.req).toBe(1);
    expect(second.value?.req).toBe(2);
    expect(first.value?.signal.aborted).toBe(false);
    expect(second.value?.signal.aborted).toBe(false);
  });

  it("aborts the outstanding poll when the worker half-closes, so it is answered at once", async () => {
    const s = requestStream<number>();
    const polls = pollsOf(s.requests, new AbortController().signal);
    s.send(1);
    const { value } = await polls.next();
    s.halfClose();
    await new Promise((r) => setImmediate(r));
    expect(value?.signal.aborted).toBe(true);
    expect((await polls.next()).done).toBe(true);
  });

  it("aborts the outstanding poll when the stream's read fails", async () => {
    const s = requestStream<number>();
    const polls = pollsOf(s.requests, new AbortController().signal);
    s.send(1);
    const { value } = await polls.next();
    s.fail(new Error("reset"));
    await new Promise((r) => setImmediate(r));
    expect(value?.signal.aborted).toBe(true);
    await expect(polls.next()).rejects.toThrow("reset");
  });

  it("aborts the outstanding poll when the call ends, and a poll read after that at once", async () => {
    const s = requestStream<number>();
    const call = new AbortController();
    const polls = pollsOf(s.requests, call.signal);
    s.send(1);
    const first = await polls.next();
    call.abort();
    expect(first.value?.signal.aborted).toBe(true);
    s.send(2);
    const second = await polls.next();
    expect(second.value?.signal.aborted).toBe(true);
  });

  it("leaves nothing per poll on the call's long-lived signal (one listener, no dependant signals)", async () => {
    const s = requestStream<number>();
    const call = new AbortController();
    const polls = pollsOf(s.requests, call.signal);
    for (let i = 0; i < 1_000; i++) {
      s.send(i);
      await polls.next();
    }
    expect(getEventListeners(call.signal, "abort")).toHaveLength(1);
    expect(dependants(call.signal)).toBe(0);
    s.halfClose();
    expect((await polls.next()).done).toBe(true);
    expect(getEventListeners(call.signal, "abort")).toHaveLength(0);
  });
});
