import type { Interceptor, Transport } from "@connectrpc/connect";
import { createGrpcTransport, createNodeHttpClient, Http2SessionManager } from "@connectrpc/connect-node";
import { type Logger, stderrLogger } from "./logger.js";
import { versionCheck } from "./version-check.js";
import { knowBinaryTransport } from "./wire/binary-transports.js";

/** Where and how to reach a taskq gateway. */
export interface TransportOptions {
  /** The gateway's gRPC address, e.g. `http://localhost:7070` (h2c) or `https://…` (TLS). */
  baseUrl: string;
  /** Bearer token sent as `authorization: Bearer <token>` on every call; unset sends none. */
  token?: string | undefined;
  /**
   * Let the gateway gzip its responses (claimed jobs, settle answers). Default false: on the networks
   * workers and gateways share, compressing every message costs both sides more CPU than the bytes it
   * saves (measured: ~5% of each process's CPU in a no-op drain). Turn on for a slow, metered link.
   */
  compression?: boolean | undefined;
  /** TLS settings of an `https://` baseUrl; unset trusts the system's CAs and presents no certificate. */
  tls?: TlsOptions | undefined;
  /**
   * Where the transport warns, once, when the gateway reports a version older than the contract this
   * SDK was built for. Default {@link stderrLogger}.
   */
  logger?: Logger | undefined;
}

/** How to reach a gateway that serves TLS with a private CA, or asks for client certificates (mTLS). */
export interface TlsOptions {
  /** PEM CA certificate(s) to trust instead of the system's, e.g. `readFileSync("ca.pem")`. */
  ca?: string | Buffer | undefined;
  /** PEM client certificate, for a gateway with mutual TLS; with `key`. */
  cert?: string | Buffer | undefined;
  /** PEM private key of `cert`. */
  key?: string | Buffer | undefined;
}

/** A gRPC (HTTP/2) transport to the gateway; Client and Worker build one unless given their own. */
export function createTransport({
  baseUrl,
  token,
  compression = false,
  tls,
  logger = stderrLogger,
}: TransportOptions): Transport {
  const interceptors: Interceptor[] = [versionCheck(baseUrl, logger)];
  if (token) {
    const value = `Bearer ${token}`;
    interceptors.push((next) => (req) => {
      req.header.set("authorization", value);
      return next(req);
    });
  }
  // gRPC is always HTTP/2 in connect-node v2 (h2c for http://, TLS for https://); one session carries
  // every stream of a Client or Worker, the worker's lean Claim stream included (wire/claim-call.ts).
  const sessionManager = new Http2SessionManager(
    baseUrl,
    {},
    tls ? { ca: tls.ca, cert: tls.cert, key: tls.key } : undefined,
  );
  // Requests are never compressed (connect's default); `acceptCompression: []` asks for plain responses.
  const transport = createGrpcTransport({
    baseUrl,
    interceptors,
    sessionManager,
    ...(compression ? {} : { acceptCompression: [] }),
  });
  const httpClient = createNodeHttpClient({ httpVersion: "2", sessionProvider: () => sessionManager });
  knowBinaryTransport(transport, compression ? null : { baseUrl, interceptors, httpClient });
  return transport;
}

/** The transport options of a client or worker built without a ready transport. */
export function requireBaseUrl(opts: {
  baseUrl?: string | undefined;
  token?: string | undefined;
  tls?: TlsOptions | undefined;
  logger?: Logger | undefined;
}): TransportOptions {
  if (!opts.baseUrl) throw new TypeError("baseUrl is required unless a transport is given");
  return { baseUrl: opts.baseUrl, token: opts.token, tls: opts.tls, logger: opts.logger };
}
