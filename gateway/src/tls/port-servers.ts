import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import type { TLSSocket } from "node:tls";
import type { Config } from "../config.js";
import { clientCertRefusal } from "./client-cert.js";
import { secureContextOptions, type TlsMaterial } from "./tls-material.js";

type H2Handler = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void;
type H1Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** The gateway's two listeners: HTTP/2 (gRPC, Connect, gRPC-Web) and HTTP/1.1 (console, REST, health). */
export interface PortServers {
  readonly grpc: http2.Http2Server | http2.Http2SecureServer;
  readonly http: http.Server | https.Server;
  /** TLS servers, for certificate reload; empty without TLS. */
  readonly tls: readonly (http2.Http2SecureServer | https.Server)[];
  readonly scheme: "http" | "https";
}

/** Probes (kubelet, load balancers) rarely hold client certificates: these answer without one. */
const PROBES = new Set(["/healthz", "/readyz"]);

/**
 * Plaintext servers without TLS material (h2c and HTTP/1.1, as before); with it, TLS on both ports:
 * HTTP/2 negotiated by ALPN on the gRPC port, HTTPS on the other. With a client CA, the gRPC port
 * refuses a client without a certificate it signed during the handshake, before any RPC; the HTTP
 * port asks for one too and refuses every request but the probes' without it, saying whether none came
 * or the one that came is not trusted.
 */
export function createPortServers(
  config: Config,
  tls: TlsMaterial | null,
  onGrpc: H2Handler,
  onHttp: H1Handler,
): PortServers {
  const settings = { maxConcurrentStreams: config.maxConcurrentStreams };
  if (!tls) {
    return {
      grpc: http2.createServer({ settings }, onGrpc),
      http: http.createServer(onHttp),
      tls: [],
      scheme: "http",
    };
  }
  const mutual = tls.ca !== undefined;
  const grpc = http2.createSecureServer(
    {
      ...secureContextOptions(tls),
      settings,
      ALPNProtocols: ["h2"],
      requestCert: mutual,
      rejectUnauthorized: mutual,
    },
    onGrpc,
  );
  const httpsServer = https.createServer(
    { ...secureContextOptions(tls), requestCert: mutual, rejectUnauthorized: false },
    (req, res) => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      if (mutual && !(req.socket as TLSSocket).authorized && !PROBES.has(path)) {
        res
          .writeHead(401, { "content-type": "text/plain" })
          .end(`${clientCertRefusal(req.socket as TLSSocket)}\n`);
        return;
      }
      onHttp(req, res);
    },
  );
  return { grpc, http: httpsServer, tls: [grpc, httpsServer], scheme: "https" };
}
