import { durationMs } from "@bufbuild/protobuf/wkt";
import type { Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { NonRetryableError, Worker } from "@taskq/sdk";
import type { StartWorker } from "@taskq/sdk/conformance";
import { ProgramSide, parseInstruction, runInstruction } from "../../src/protocol/program-side.js";

/** What a variant of the adapter changes, given the case's settings. */
export interface SdkVariant {
  /** Extra interceptors on the worker's transport, inside the token's. */
  interceptors?: Interceptor[];
  /** Reconnect backoff settings instead of the case's. */
  reconnect?: { initialMs?: number; maxMs?: number };
}

export interface SdkAdapterOptions {
  implementation: string;
  variant?: (start: StartWorker) => SdkVariant;
}

/**
 * The TypeScript SDK behind the conformance protocol: StartWorker becomes WorkerOptions, the generic
 * handler runs each job's instruction, StopWorker becomes `worker.stop()`.
 */
export async function runSdkAdapter(opts: SdkAdapterOptions): Promise<void> {
  const side = new ProgramSide();
  const start = await side.start();
  const ms = (d: Parameters<typeof durationMs>[0] | undefined) => (d ? durationMs(d) : undefined);
  const interceptors: Interceptor[] = [];
  if (start.token) {
    const value = `Bearer ${start.token}`;
    interceptors.push((next) => (req) => {
      req.header.set("authorization", value);
      return next(req);
    });
  }
  const variant = opts.variant?.(start) ?? {};
  // Inside the token's interceptor (connect runs the first one outermost), so a fault sees it all.
  interceptors.push(...(variant.interceptors ?? []));
  const worker = new Worker({
    transport: createGrpcTransport({ baseUrl: start.gatewayUrl, interceptors }),
    queues: start.queues,
    concurrency: start.concurrency || undefined,
    prefetch: start.prefetch || undefined,
    workerId: start.workerId || undefined,
    leaseMs: ms(start.leaseDuration),
    maxWaitMs: ms(start.maxWait),
    shutdownGraceMs: ms(start.shutdownGrace),
    reconnect: {
      ...(start.reconnectInitial && { initialMs: durationMs(start.reconnectInitial) }),
      ...(start.reconnectMax && { maxMs: durationMs(start.reconnectMax) }),
      ...variant.reconnect,
    },
    async handler(job) {
      const ins = parseInstruction(job.payload);
      const finished = await runInstruction(side, job, ins, job.signal);
      if (!finished) throw job.signal.reason;
      const o = ins.outcome;
      if (o.case !== "fail") return o.value?.result ?? "";
      const err = o.value.retryable ? new Error(o.value.message) : new NonRetryableError(o.value.message);
      err.name = o.value.type;
      if (o.value.retryAfter) Object.assign(err, { retryAfterMs: durationMs(o.value.retryAfter) });
      throw err;
    },
  });
  await worker.start();
  side.ready(opts.implementation, ["prefetch"]);
  const stop = await side.stop();
  await worker.stop({ graceMs: ms(stop.grace) });
  side.stoppedAndExit();
}
