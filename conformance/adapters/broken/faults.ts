import type { Interceptor, StreamRequest, StreamResponse } from "@connectrpc/connect";
import { ThrottleReason } from "@taskq/sdk/proto";

type Message = Record<string, unknown>;

/** Rewrite each message a stream of `method` sends (null drops it). */
function onRequests(method: string, rewrite: (m: Message) => Message | Message[] | null): Interceptor {
  return (next) => async (req) => {
    if (!req.stream || req.method.name !== method) return next(req);
    const source = req.message;
    async function* rewritten() {
      for await (const m of source) {
        const out = rewrite(m as Message);
        if (out === null) continue;
        for (const x of Array.isArray(out) ? out : [out]) yield x;
      }
    }
    return next({ ...req, message: rewritten() } as StreamRequest);
  };
}

/** Rewrite each message a stream of `method` receives. */
function onResponses(method: string, rewrite: (m: Message) => Message): Interceptor {
  return (next) => async (req) => {
    const res = await next(req);
    if (!res.stream || req.method.name !== method) return res;
    const source = res.message;
    async function* rewritten() {
      for await (const m of source) yield rewrite(m as Message);
    }
    return { ...res, message: rewritten() } as StreamResponse;
  };
}

/** Cancel the stream of `method` where the worker would half-close it (end its requests). */
function cancelOnHalfClose(method: string): Interceptor {
  return (next) => async (req) => {
    if (!req.stream || req.method.name !== method) return next(req);
    const source = req.message;
    const reset = new AbortController();
    async function* cancelling() {
      yield* source;
      // Reset the call instead of ending its requests, which would half-close it.
      reset.abort();
      await new Promise(() => {});
    }
    const signal = AbortSignal.any([req.signal, reset.signal]);
    return next({ ...req, signal, message: cancelling() } as StreamRequest);
  };
}

/** One fault per behaviour the suite must catch. */
export const faults = {
  /**
   * Takes a PAUSED or BREAKER_OPEN verdict for a plain throttle: it sleeps the queue as it should, but
   * keeps its buffered jobs of that queue and starts them as slots free instead of giving them back.
   */
  "keeps-buffer-on-pause": onResponses("Claim", (m) => ({
    ...m,
    throttled: (m.throttled as Message[]).map((v) =>
      v.reason === ThrottleReason.PAUSED || v.reason === ThrottleReason.BREAKER_OPEN
        ? { ...v, reason: ThrottleReason.THROTTLE }
        : v,
    ),
  })),
  /** Never sees a verdict, so polls a throttled queue again at once. */
  "ignores-retry-after": onResponses("Claim", (m) => ({ ...m, throttled: [] })),
  /** Heartbeats never leave the worker. */
  "never-heartbeats": onRequests("Heartbeat", () => null),
  /** Every settle request goes out twice. */
  "settles-twice": onRequests("Settle", (m) => [m, m]),
  /** Asks for three times as many jobs as it has free slots, and runs them all. */
  "exceeds-concurrency": onRequests("Claim", (m) => ({ ...m, maxJobs: 3 * (m.maxJobs as number) })),
  /** Polls with max_wait 0: an empty queue answers at once, and the worker asks again at once. */
  "hot-loops-on-empty": onRequests("Claim", (m) => ({ ...m, maxWait: undefined })),
  /** Drains by cancelling its Claim stream instead of half-closing it. */
  "cancels-instead-of-half-closing": cancelOnHalfClose("Claim"),
  /** Sends no credentials, whatever token it was given. */
  "drops-token": (next) => (req) => {
    req.header.delete("authorization");
    return next(req);
  },
} satisfies Record<string, Interceptor>;
