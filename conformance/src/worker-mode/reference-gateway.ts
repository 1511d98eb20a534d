import http2 from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { durationMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type HandlerContext,
  type ServiceImpl,
} from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { ClaimStep, GatewayScript } from "@taskq/sdk/conformance";
import {
  type ClaimRequest,
  type ClaimResponse,
  ClaimResponseSchema,
  type HeartbeatRequest,
  type HeartbeatResponse,
  HeartbeatResponseSchema,
  JobState,
  LeaseState,
  type SettleRequest,
  SettleResponseSchema,
  type SettleStatus,
  WorkerService,
} from "@taskq/sdk/proto";
import { JobPool } from "./job-pool.js";
import { LeaseBook } from "./lease-book.js";
import { type EndHow, leaseKey, type StreamName, type Trace } from "./trace.js";

const DEFAULT_LEASE_MS = 5_000;
// A long poll cut short by a half-close is answered this long after it, as a real gateway's claim takes
// a moment: a worker that resets its Claim stream right after half-closing it (some HTTP/2 stacks send
// the end of the requests first, then the reset) shows as cancelling, not as waiting for the answer.
const DRAINED_ANSWER_MS = 100;
// A connection dropped mid-answer is cut this long after the part of the answer was written, so that
// part reaches the worker before the connection ends.
const DROP_AFTER_WRITE_MS = 30;
/** What the trace's `fail` names a connection the gateway dropped mid-answer. */
export const CONNECTION_DROPPED = "CONNECTION_DROPPED";

// The HTTP/2 stream under a call: a connection dropped mid-answer writes on it directly.
const rawStream = createContextKey<http2.ServerHttp2Stream | undefined>(undefined, {
  description: "the call's HTTP/2 stream",
});

/** A gRPC status code from its name in a case ("UNAVAILABLE", "resource_exhausted"). */
export function codeOf(name: string): Code {
  const camel = name
    .toLowerCase()
    .split("_")
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
  const code = (Code as unknown as Record<string, Code | undefined>)[camel];
  if (code === undefined) throw new Error(`unknown gRPC status code "${name}"`);
  return code;
}

export interface ReferenceGateway {
  /** h2c address for the program, e.g. http://127.0.0.1:40123. */
  readonly url: string;
  /** The worker said Ready: start the clock of jobs' ready_after. */
  markReady(t: number): void;
  stop(): Promise<void>;
}

/**
 * The scripted, instrumented gateway of worker mode. It answers every RPC as the case's script says
 * and otherwise like a real gateway (rpc/worker.ts), and records each message in the trace.
 */
export async function startReferenceGateway(
  script: GatewayScript,
  defaultQueue: string,
  trace: Trace,
): Promise<ReferenceGateway> {
  // Each connection's socket, by its peer address: a connection dropped mid-answer is cut at the socket,
  // so the worker sees the TCP connection end, not an HTTP/2 reset or GOAWAY.
  const sockets = new Map<string, Socket>();
  const peer = (s: { remoteAddress?: string | undefined; remotePort?: number | undefined }) =>
    `${s.remoteAddress}:${s.remotePort}`;
  const cut = (session: http2.Http2Session) => sockets.get(peer(session.socket))?.destroy();
  const service = scriptedWorkerService(script, defaultQueue, trace, cut);
  const handler = connectNodeAdapter({
    routes: (router) => router.service(WorkerService, service.impl),
    contextValues: (req) => createContextValues().set(rawStream, (req as http2.Http2ServerRequest).stream),
  });
  const server = http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("connection", (socket: Socket) => {
    const key = peer(socket);
    sockets.set(key, socket);
    socket.on("close", () => sockets.delete(key));
  });
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    markReady: (t) => service.pool.markReady(t),
    async stop() {
      service.closed.abort();
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function scriptedWorkerService(
  script: GatewayScript,
  defaultQueue: string,
  trace: Trace,
  cut: (session: http2.Http2Session) => void,
) {
  const pool = new JobPool(script.jobs, defaultQueue);
  const book = new LeaseBook();
  const closed = new AbortController();
  const defaultLeaseMs = script.defaultLease ? durationMs(script.defaultLease) : DEFAULT_LEASE_MS;
  const claimSteps = [...script.claims];
  const ids: Record<StreamName, number> = { claim: 0, heartbeat: 0, settle: 0 };
  let beatRequests = 0;

  const hand = (req: ClaimRequest, max: number): { res: ClaimResponse; deadlines: number[] } => {
    const now = trace.now();
    const leaseMs = req.leaseDuration ? durationMs(req.leaseDuration) : defaultLeaseMs;
    const taken = pool.take(req.queues, max, now);
    const wallNow = Date.now();
    const jobs = taken.map(({ job, queue, attempt, payload }) => {
      book.handOut(job.id, attempt, leaseMs);
      return {
        id: job.id,
        queue,
        attempt,
        maxAttempts: Math.max(3, attempt),
        leaseDeadline: timestampFromMs(wallNow + leaseMs),
        payload,
        contentType: "application/json",
        enqueuedAt: timestampFromMs(wallNow),
      };
    });
    return { res: create(ClaimResponseSchema, { jobs }), deadlines: jobs.map(() => now + leaseMs) };
  };

  /**
   * An unscripted poll: ready jobs now, or wait for one up to max_wait (a long poll). `drained` (the
   * worker half-closed the stream) cuts the wait short: the poll answers with what is ready then. A poll
   * carrying settlements is never parked (as on a real gateway). The reference gateway does not apply
   * them: it answers no settle_results, as a gateway from before settle-on-poll, so the worker sends
   * them on its Settle stream, where the script and the trace see them.
   */
  const longPoll = async (req: ClaimRequest, signal: AbortSignal, drained?: AbortSignal) => {
    const waitMs = req.settlements.length > 0 || !req.maxWait ? 0 : durationMs(req.maxWait);
    const deadline = trace.now() + waitMs;
    const wake = drained ? AbortSignal.any([signal, drained]) : signal;
    for (;;) {
      const got = hand(req, req.maxJobs);
      const now = trace.now();
      if (got.res.jobs.length > 0 || now >= deadline || signal.aborted) return got;
      if (wake.aborted) {
        await sleep(DRAINED_ANSWER_MS, signal);
        return hand(req, req.maxJobs);
      }
      // A job given back (Released) is claimable at once: it wakes the parked poll, as on a real gateway.
      const requeued = new AbortController();
      const unsubscribe = pool.onRequeue(() => requeued.abort());
      // A poll asking for no jobs (which a real gateway refuses) can only wait out its max_wait.
      const readyIn = req.maxJobs > 0 ? pool.nextReadyIn(req.queues, now) : Number.POSITIVE_INFINITY;
      await sleep(Math.min(deadline - now, readyIn), AbortSignal.any([wake, requeued.signal]));
      unsubscribe();
    }
  };

  const scripted = (req: ClaimRequest, step: ClaimStep) => {
    const got = step.jobs ? hand(req, req.maxJobs) : { res: create(ClaimResponseSchema), deadlines: [] };
    got.res.throttled = step.throttled.map((v) => ({ ...v, queue: v.queue || defaultQueue }));
    return got;
  };

  const answerPoll = async (id: number, req: ClaimRequest, signal: AbortSignal, drained?: AbortSignal) => {
    trace.add("poll", { id, req });
    const step = claimSteps.shift();
    if (step?.fail && !step.failAfterAnswer && !step.dropMidAnswer) return { fail: step.fail };
    const got = step?.dropMidAnswer
      ? hand(req, req.maxJobs)
      : step
        ? scripted(req, step)
        : await longPoll(req, signal, drained);
    trace.add("claim_answer", { id, ...got });
    // Like a real gateway: jobs whose answer could not be delivered go back at once.
    const undelivered = () => {
      if (got.res.jobs.length === 0) return;
      pool.putBack(got.res.jobs.map((j) => j.id));
      for (const j of got.res.jobs) book.release(j.id, j.attempt);
      trace.add("claim_released", { id, leases: got.res.jobs.map((j) => leaseKey(j.id, j.attempt)) });
    };
    if (step?.dropMidAnswer) return { drop: got.res, undelivered };
    return { res: got.res, failAfter: step?.fail || undefined, undelivered };
  };

  const beat = (id: number, req: HeartbeatRequest): HeartbeatResponse => {
    const now = trace.now();
    const wallNow = Date.now();
    const deadlines: number[] = [];
    const leases = req.leases.map((ref) => {
      const seen = book.beat(ref.jobId, ref.attempt);
      const rule = script.leases.find((l) => l.jobId === ref.jobId);
      let state =
        seen && !seen.gone ? (rule?.answers[seen.n - 1] ?? LeaseState.EXTENDED) : LeaseState.LEASE_LOST;
      if (state === LeaseState.UNSPECIFIED) state = LeaseState.EXTENDED;
      if (state === LeaseState.CANCEL_REQUESTED) book.markCancelRequested(ref.jobId, ref.attempt);
      if (state === LeaseState.LEASE_LOST) {
        book.markLost(ref.jobId, ref.attempt);
        deadlines.push(Number.NaN);
        return { lease: ref, state };
      }
      const extendMs = rule?.extendBy
        ? durationMs(rule.extendBy)
        : req.extendBy
          ? durationMs(req.extendBy)
          : (seen?.leaseMs ?? defaultLeaseMs);
      deadlines.push(now + extendMs);
      return { lease: ref, state, leaseDeadline: timestampFromMs(wallNow + extendMs) };
    });
    const res = create(HeartbeatResponseSchema, { leases });
    trace.add("beat_answer", { id, res, deadlines });
    return res;
  };

  const settle = async (id: number, req: SettleRequest, signal: AbortSignal) => {
    let fail: string | undefined;
    let delayMs = 0;
    const forced: Array<SettleStatus | undefined> = req.settlements.map((s) => {
      const ref = s.lease;
      const n = ref ? book.settleOrdinal(ref.jobId, ref.attempt) : 0;
      const answer = script.settles.find((x) => x.jobId === ref?.jobId)?.answers[n - 1];
      if (answer?.fail) fail ??= answer.fail;
      if (answer?.delay) delayMs = Math.max(delayMs, durationMs(answer.delay));
      return answer?.status || undefined;
    });
    // A held-back answer: the lease stays unsettled (heartbeats extend it) until it is answered.
    if (delayMs > 0) await sleep(delayMs, signal);
    if (fail) return { fail };
    const results = req.settlements.map((s, i) => {
      const { applied, ...r } = book.settle(s, forced[i]);
      // Released and not cancelled: ready again at once, for its next attempt (a repeat changes nothing).
      if (applied && s.lease && s.outcome.case === "released" && r.state === JobState.QUEUED)
        pool.requeue(s.lease.jobId);
      return { lease: s.lease, ...r };
    });
    const res = create(SettleResponseSchema, { results });
    trace.add("settle_answer", { id, res });
    return { res };
  };

  /**
   * Open/fail/end bookkeeping shared by the three streams. Like the real gateway (rpc/polls.ts) it reads
   * one request ahead, so `each` gets a signal that fires once the worker has half-closed the stream
   * (or the read failed): an outstanding long poll then answers at once. The "end" event says how the
   * stream ended: half-closed by the worker (its input ended while the call was live, and the last
   * answer went out), cancelled by the worker (a reset), or cut by the reference gateway stopping.
   */
  async function* traced<I, O>(
    stream: StreamName,
    ctx: HandlerContext,
    requests: AsyncIterable<I>,
    each: (
      id: number,
      req: I,
      drained: AbortSignal,
    ) => Promise<{
      res?: O;
      fail?: string;
      failAfter?: string | undefined;
      /** Drop the connection partway through this answer instead of sending it. */
      drop?: ClaimResponse;
      undelivered?: () => void;
    }>,
  ): AsyncGenerator<O> {
    const id = ++ids[stream];
    // Taken now: a stream that has closed no longer names its session.
    const session = ctx.values.get(rawStream)?.session;
    trace.add("open", { stream, id, authorization: ctx.requestHeader.get("authorization") ?? "" });
    let failed = false;
    let finished = false;
    // A reset also ends the input (Node pushes the end, then aborts the call's signal before the read
    // resolves), so the input counts as half-closed only if the call was still live when it ended.
    let halfClosed = false;
    const it = requests[Symbol.asyncIterator]();
    const read = () => {
      const next = it.next();
      const drained = new AbortController();
      next.then(
        (n) => {
          if (!n.done) return;
          halfClosed = !ctx.signal.aborted && !closed.signal.aborted;
          drained.abort();
        },
        () => drained.abort(),
      );
      return { next, drained: drained.signal };
    };
    try {
      let ahead = read();
      for (;;) {
        const r = await ahead.next;
        if (r.done) break;
        ahead = read();
        const out = await each(id, r.value, ahead.drained);
        if (out.fail) throw failWith(stream, id, out.fail);
        if (out.drop) {
          await dropMidAnswer(ctx, out.drop);
          out.undelivered?.();
          throw failWith(stream, id, CONNECTION_DROPPED);
        }
        if (out.res) {
          let delivered = false;
          try {
            yield out.res;
            delivered = true;
          } finally {
            if (!delivered) out.undelivered?.();
          }
        }
        if (out.failAfter) throw failWith(stream, id, out.failAfter);
      }
      finished = true;
    } catch (err) {
      if (err instanceof ConnectError && err.message.includes("[conformance]")) failed = true;
      throw err;
    } finally {
      if (!failed) {
        // The call's signal fires once the stream has closed, which a clean end has not yet done here:
        // if it already fired, the worker reset the stream after half-closing it.
        const how: EndHow =
          finished && halfClosed && !ctx.signal.aborted
            ? "half-closed"
            : closed.signal.aborted || (session && dropped.has(session))
              ? "gateway"
              : "cancelled";
        trace.add("end", { stream, id, how });
      }
    }
  }

  const failWith = (stream: StreamName, id: number, code: string) => {
    trace.add("fail", { stream, id, code });
    return code === CONNECTION_DROPPED
      ? new ConnectError(`[conformance] dropped the connection of the ${stream} stream`, Code.Aborted)
      : new ConnectError(`[conformance] scripted ${code} on the ${stream} stream`, codeOf(code));
  };

  // Connections dropped mid-answer: the streams they cut ended by the gateway's doing.
  const dropped = new WeakSet<http2.Http2Session>();

  /**
   * Send the response headers (unless an earlier answer did) and the first half of the answer's gRPC
   * message, then destroy the connection: the worker sees a stream broken inside a message, the way a
   * gateway that dies or a proxy that cuts the connection mid-answer leaves it. Every other stream on
   * the connection breaks with it.
   */
  const dropMidAnswer = async (ctx: HandlerContext, res: ClaimResponse) => {
    const h2 = ctx.values.get(rawStream);
    if (!h2) throw new Error("no HTTP/2 stream under the call");
    const message = toBinary(ClaimResponseSchema, res);
    const frame = new Uint8Array(5 + message.length);
    new DataView(frame.buffer).setUint32(1, message.length);
    frame.set(message, 5);
    const contentType = ctx.requestHeader.get("content-type") ?? "";
    if (!h2.headersSent)
      h2.respond({
        ":status": 200,
        "content-type": contentType.startsWith("application/grpc") ? contentType : "application/grpc",
      });
    await new Promise<void>((resolve) => h2.write(frame.subarray(0, frame.length >> 1), () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, DROP_AFTER_WRITE_MS));
    const session = h2.session;
    if (!session) return;
    dropped.add(session);
    const closed = new Promise((resolve) => h2.once("close", resolve));
    cut(session);
    // The call ends once its stream has closed: connect then writes nothing more on it.
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1_000))]);
  };

  const impl: ServiceImpl<typeof WorkerService> = {
    claim: (requests, ctx) => {
      const signal = AbortSignal.any([ctx.signal, closed.signal]);
      // A half-close cuts an outstanding unscripted long poll short, as on the real gateway.
      return traced("claim", ctx, requests, (id, req: ClaimRequest, drained) =>
        answerPoll(id, req, signal, drained),
      );
    },
    async claimOnce(req, ctx) {
      trace.add("open", {
        stream: "claim",
        id: 0,
        authorization: ctx.requestHeader.get("authorization") ?? "",
      });
      const out = await answerPoll(0, req, AbortSignal.any([ctx.signal, closed.signal]));
      if (out.fail) throw failWith("claim", 0, out.fail);
      return out.res as ClaimResponse;
    },
    heartbeat: (requests, ctx) =>
      traced("heartbeat", ctx, requests, async (id, req: HeartbeatRequest) => {
        trace.add("beat", { id, req });
        const n = ++beatRequests;
        const fault = script.heartbeatFaults.find((f) => f.request === n);
        return fault ? { fail: fault.code } : { res: beat(id, req) };
      }),
    settle: (requests, ctx) =>
      traced("settle", ctx, requests, async (id, req: SettleRequest) => {
        trace.add("settle", { id, req });
        return settle(id, req, AbortSignal.any([ctx.signal, closed.signal]));
      }),
  };
  return { impl, pool, closed };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(
      done,
      Number.isFinite(ms) ? Math.max(0, Math.min(ms, 2 ** 31 - 1)) : 2 ** 31 - 1,
    );
    signal.addEventListener("abort", done, { once: true });
  });
}
