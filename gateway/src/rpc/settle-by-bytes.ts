import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { SettleRequestView, type SettleResponse, WorkerService } from "@taskq/sdk/proto";
import { isJsonContentType } from "./wire.js";

/** A Settle handler that takes each request's settlements as their encoded bytes. */
export type SettleByBytes = (
  requests: AsyncIterable<{ settlements: Uint8Array[] }>,
  ctx: HandlerContext,
) => AsyncIterable<SettleResponse>;

/**
 * Routes binary Settle requests to `settle` with each Settlement left as its bytes (the SDK's
 * SettleRequestView: an embedded message is a length-delimited value on the wire, as bytes are), so
 * the gateway reads them by hand (settlement-bytes.ts) instead of building four messages per finished
 * job through protobuf-es's reflection. JSON requests keep the handler registered for
 * WorkerService.Settle. Both answer with the same SettleResponse. Call after registering WorkerService.
 */
export function settleByBytes(router: ConnectRouter, settle: SettleByBytes): void {
  const method = { ...WorkerService.method.settle, input: SettleRequestView };
  router.rpc(method as unknown as typeof WorkerService.method.settle, settle as never);
  const byBytes = router.handlers.pop();
  const at = router.handlers.findIndex((h) => h.requestPath === byBytes?.requestPath);
  const byMessages = router.handlers[at];
  if (!byBytes || !byMessages) throw new Error("settleByBytes: register WorkerService first");
  const dispatch = (req: Parameters<UniversalHandler>[0]) =>
    isJsonContentType(req.header.get("content-type")) ? byMessages(req) : byBytes(req);
  // The merged handler presents itself as WorkerService.Settle (path, message types, protocols).
  router.handlers[at] = Object.assign(dispatch, byMessages);
}
