import type http from "node:http";
import type http2 from "node:http2";
import type { AddressInfo, Server } from "node:net";
import type { Config } from "../config.js";
import { createPortServers, type PortServers } from "../tls/port-servers.js";
import type { TlsMaterial } from "../tls/tls-material.js";
import { GRPC_PORT, HTTP_PORT, listenError, type PortSetting } from "./listen-error.js";

/** The gateway's two ports, listening. */
export interface Listeners {
  /** Base URL of the HTTP/2 port, at the address it listens on (0.0.0.0 or [::] for every interface). */
  readonly grpcUrl: string;
  /** Base URL of the HTTP/1.1 port, likewise. */
  readonly httpUrl: string;
  /** Its TLS servers, for certificate reload; empty without TLS. */
  readonly tls: PortServers["tls"];
  /** Stops accepting and ends open connections: politely first, for good after 200 ms. */
  close(): Promise<void>;
}

/**
 * Listens on the HTTP/2 (gRPC) and HTTP/1.1 ports the config names, with TLS when `tls` is given. A
 * port that cannot be had throws a ConfigError naming it, with neither port left open.
 */
export async function listenOnPorts(
  config: Config,
  tls: TlsMaterial | null,
  onGrpc: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
  onHttp: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<Listeners> {
  const servers = createPortServers(config, tls, onGrpc, onHttp);
  const h2 = servers.grpc;
  const h1 = servers.http;
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await listen(h2, config.grpcPort, config.host, GRPC_PORT);
  try {
    await listen(h1, config.httpPort, config.host, HTTP_PORT);
  } catch (err) {
    await close(h2);
    throw err;
  }
  // The address as bound, a wildcard (0.0.0.0, [::]) included: every interface, not only loopback.
  const urlOf = (s: Server) => {
    const a = s.address() as AddressInfo;
    const host = a.family === "IPv6" ? `[${a.address}]` : a.address;
    return `${servers.scheme}://${host}:${a.port}`;
  };
  return {
    grpcUrl: urlOf(h2),
    httpUrl: urlOf(h1),
    tls: servers.tls,
    close: async () => {
      const closed = Promise.all([close(h2), close(h1)]);
      for (const s of sessions) s.close();
      // Streams still open after a moment (long polls, idle worker streams) are ended for good.
      const force = setTimeout(() => {
        for (const s of sessions) s.destroy();
        h1.closeAllConnections();
      }, 200);
      await closed;
      clearTimeout(force);
    },
  };
}

function listen(server: Server, port: number, host: string, setting: PortSetting): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(listenError(err, setting, host, port));
    server.once("error", failed);
    server.listen(port, host, () => {
      server.off("error", failed);
      resolve();
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
