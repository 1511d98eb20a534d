import type { Interceptor, Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

/** Where and how to reach a taskq gateway. */
export interface TransportOptions {
  /** The gateway's gRPC address, e.g. `http://localhost:7070` (h2c) or `https://…` (TLS). */
  baseUrl: string;
  /** Bearer token sent as `authorization: Bearer <token>` on every call; unset sends none. */
  token?: string | undefined;
}

/** A gRPC (HTTP/2) transport to the gateway; Client and Worker build one unless given their own. */
export function createTransport({ baseUrl, token }: TransportOptions): Transport {
  const interceptors: Interceptor[] = [];
  if (token) {
    const value = `Bearer ${token}`;
    interceptors.push((next) => (req) => {
      req.header.set("authorization", value);
      return next(req);
    });
  }
  // gRPC is always HTTP/2 in connect-node v2 (h2c for http://, TLS for https://); one session carries
  // every stream of a Client or Worker.
  return createGrpcTransport({ baseUrl, interceptors });
}
