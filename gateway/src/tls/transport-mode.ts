import { isIP } from "node:net";
import type { Config } from "../config.js";
import { ConfigError } from "../errors.js";

/** How the gateway's ports are protected, as /readyz reports it. */
export type TransportMode = "tls" | "mtls" | "plaintext-loopback" | "insecure-plaintext";

/** True when `host` only takes connections from this machine. */
export function isLoopback(host: string): boolean {
  if (host === "localhost" || host === "::1") return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

export function transportMode(config: Config): TransportMode {
  if (config.tlsCertFile) return config.tlsClientCaFile ? "mtls" : "tls";
  return isLoopback(config.host) ? "plaintext-loopback" : "insecure-plaintext";
}

/**
 * `taskq gateway` carries bearer tokens: plaintext on an address other machines reach is refused unless
 * the operator says, once and on purpose, that something else (a TLS-terminating load balancer) does TLS.
 * Dev mode is left alone: it binds loopback by default and is not for production.
 */
export function requireSafeBind(config: Config): void {
  if (config.mode !== "gateway" || config.insecurePlaintext) return;
  if (transportMode(config) !== "insecure-plaintext") return;
  throw new ConfigError(
    `refusing plaintext on non-loopback host ${config.host}: set tlsCertFile and tlsKeyFile (TASKQ_TLS_CERT_FILE, TASKQ_TLS_KEY_FILE), or pass --insecure-plaintext (TASKQ_INSECURE_PLAINTEXT=1) when a TLS-terminating load balancer is in front`,
  );
}
