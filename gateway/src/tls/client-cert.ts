import type { TLSSocket } from "node:tls";

/**
 * Why the HTTP port refuses a connection's client certificate under mutual TLS, in words for the one
 * who sent it: none was sent, or the one sent did not verify (OpenSSL's reason, as Node names it).
 */
export function clientCertRefusal(socket: TLSSocket): string {
  if (Object.keys(socket.getPeerCertificate()).length === 0) return "a client certificate is required";
  const reason = String(socket.authorizationError ?? "");
  return `the client certificate is not trusted: ${UNTRUSTED[reason] ?? reason}`;
}

const NOT_OUR_CA = "it is not signed by a CA this gateway trusts (tlsClientCaFile)";

/** OpenSSL's verification errors, as a client can act on them; any other is shown by its name. */
const UNTRUSTED: Record<string, string> = {
  UNABLE_TO_GET_ISSUER_CERT: NOT_OUR_CA,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: NOT_OUR_CA,
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: NOT_OUR_CA,
  SELF_SIGNED_CERT_IN_CHAIN: NOT_OUR_CA,
  DEPTH_ZERO_SELF_SIGNED_CERT: `${NOT_OUR_CA}: it is self-signed`,
  CERT_SIGNATURE_FAILURE: `${NOT_OUR_CA}: its signature does not verify`,
  CERT_HAS_EXPIRED: "it has expired",
  CERT_NOT_YET_VALID: "it is not valid yet",
  CERT_REVOKED: "it has been revoked",
  INVALID_PURPOSE: "it is not for client authentication (extendedKeyUsage)",
};
