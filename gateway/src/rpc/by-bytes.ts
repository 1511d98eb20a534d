import type { DescMessage } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { WorkerService } from "@taskq/sdk/proto";
import { isJsonContentType } from "./wire.js";

/** The WorkerService methods whose binary requests carry settlements: Settle and Claim. */
type ByBytesMethod = typeof WorkerService.method.settle | typeof WorkerService.method.claim;

/**
 * Routes binary requests of `method` to `handler` with each Settlement left as its bytes (`view`, the
 * SDK's SettleRequestView or ClaimRequestView: an embedded message is a length-delimited value on the
 * wire, as bytes are), so the gateway reads them by hand (settlement-bytes.ts) instead of building four
 * messages per finished job through protobuf-es's reflection. JSON requests keep the handler registered
 * for the method. Both answer with the same response. Call after registering WorkerService.
 */
export function routeByBytes(
  router: ConnectRouter,
  method: ByBytesMethod,
  view: DescMessage,
  handler: unknown,
): void {
  router.rpc({ ...method, input: view } as unknown as typeof method, handler as never);
  const byBytes = router.handlers.pop();
  const at = router.handlers.findIndex((h) => h.requestPath === byBytes?.requestPath);
  const byMessages = router.handlers[at];
  if (!byBytes || !byMessages) throw new Error("routeByBytes: register WorkerService first");
  const dispatch = (req: Parameters<UniversalHandler>[0]) =>
    isJsonContentType(req.header.get("content-type")) ? byMessages(req) : byBytes(req);
  // The merged handler presents itself as the method (path, message types, protocols).
  router.handlers[at] = Object.assign(dispatch, byMessages);
}
