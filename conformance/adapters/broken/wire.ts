// Interceptors that break a worker on the wire: rewrite what a stream sends or receives, or how it ends.
import {
  Code,
  ConnectError,
  type Interceptor,
  type StreamRequest,
  type StreamResponse,
} from "@connectrpc/connect";

export type Message = Record<string, unknown>;
export type Method = "Claim" | "Heartbeat" | "Settle";

/** Rewrite each message a stream of `method` sends (null drops it). */
export function onRequests(method: Method, rewrite: (m: Message) => Message | Message[] | null): Interceptor {
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
export function onResponses(method: Method, rewrite: (m: Message) => Message): Interceptor {
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

/** A stream of `method` that fails with `from` fails with `to` instead, as the worker sees it. */
export function errorAs(method: Method, from: Code, to: Code): Interceptor {
  return (next) => async (req) => {
    const res = await next(req);
    if (!res.stream || req.method.name !== method) return res;
    const source = res.message;
    async function* translated() {
      try {
        yield* source;
      } catch (err) {
        if (err instanceof ConnectError && err.code === from) throw new ConnectError(err.rawMessage, to);
        throw err;
      }
    }
    return { ...res, message: translated() } as StreamResponse;
  };
}

/** Cancel the stream of `method` where the worker would half-close it (end its requests). */
export function cancelOnHalfClose(method: Method): Interceptor {
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

/**
 * Once `stop(code)` says so for an error that ended a stream of `method`, the worker opens no stream of
 * `method` again: each later call is never sent, and waits, unanswered, until the worker cancels it.
 */
export function givesUpAfter(method: Method, stop: (code: Code) => boolean): Interceptor {
  let given = false;
  return (next) => async (req) => {
    if (!req.stream || req.method.name !== method) return next(req);
    if (given) return unanswered(req);
    const seen = (err: unknown) => {
      if (stop(ConnectError.from(err).code)) given = true;
      return err;
    };
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (err) {
      throw seen(err);
    }
    if (!res.stream) return res;
    const source = res.message;
    async function* watched() {
      try {
        yield* source;
      } catch (err) {
        throw seen(err);
      }
    }
    return { ...res, message: watched() } as StreamResponse;
  };
}

/** A stream call that never reaches the gateway and never answers: it ends when it is cancelled. */
function unanswered(req: StreamRequest): StreamResponse {
  async function* nothing(): AsyncGenerator<never> {
    await new Promise<void>((resolve) => {
      if (req.signal.aborted) resolve();
      req.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    throw new ConnectError("cancelled before any answer", Code.Canceled);
  }
  return {
    stream: true,
    service: req.service,
    method: req.method,
    header: new Headers(),
    trailer: new Headers(),
    message: nothing(),
  } as StreamResponse;
}

/** Calls of `method` except the first one, e.g. a Claim stream reopened after a failure. */
export function afterFirstCall(method: Method, inner: Interceptor): Interceptor {
  let calls = 0;
  return (next) => {
    const wrapped = inner(next);
    return (req) => (req.method.name === method && calls++ > 0 ? wrapped(req) : next(req));
  };
}

export { Code };
