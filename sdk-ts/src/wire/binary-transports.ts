import type { Transport } from "@connectrpc/connect";
import type { ClaimCallParts } from "./claim-call.js";

/**
 * Transports built by createTransport: gRPC, so always binary protobuf; with what a lean Claim stream
 * needs of them, unless they accept compressed answers (that stays connect's to read).
 */
const binaryTransports = new WeakMap<Transport, ClaimCallParts | null>();

/** Notes a transport createTransport built: `parts` for a lean Claim stream, null when it takes compressed answers. */
export function knowBinaryTransport(transport: Transport, parts: ClaimCallParts | null): void {
  binaryTransports.set(transport, parts);
}

/** What a worker's lean Claim stream needs of `transport`, if createTransport built it without compression. */
export function leanClaimParts(transport: Transport): ClaimCallParts | undefined {
  return binaryTransports.get(transport) ?? undefined;
}

/**
 * True for a transport known to carry binary protobuf over HTTP/2 (one createTransport built); a worker
 * then reads and writes its hot messages by hand (worker-rpc.ts), and a Client enqueues over a stream.
 * Any other transport may be JSON, or HTTP/1.1.
 */
export function speaksBinary(transport: Transport): boolean {
  return binaryTransports.has(transport);
}
