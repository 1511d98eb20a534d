import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { WorkerService } from "@taskq/sdk/proto";
import type { Gauge } from "prom-client";

type Streams = "claim" | "settle" | "heartbeat";
type Impl = ServiceImpl<typeof WorkerService>;

/**
 * The worker service with its bidi streams counted in `gauge{rpc}`: up when a handler starts, down
 * however it ends — the client half-closes, resets or goes away (connect-node then returns or throws
 * into the handler), the handler throws, or the gateway shuts its connections down.
 */
export function countOpenStreams(impl: Impl, gauge: Gauge<"rpc">): Impl {
  const counted = <I, O>(
    rpc: Streams,
    handler: (requests: AsyncIterable<I>, ctx: HandlerContext) => AsyncIterable<O>,
  ) =>
    async function* (requests: AsyncIterable<I>, ctx: HandlerContext): AsyncGenerator<O> {
      gauge.inc({ rpc });
      try {
        yield* handler.call(impl, requests, ctx);
      } finally {
        gauge.dec({ rpc });
      }
    };
  return {
    ...impl,
    claim: counted("claim", impl.claim),
    settle: counted("settle", impl.settle),
    heartbeat: counted("heartbeat", impl.heartbeat),
  };
}
