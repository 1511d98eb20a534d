import type { Role } from "../auth/roles.js";
import { hashToken, newToken } from "../auth/tokens.js";
import type { Config } from "../config.js";
import { startTestGateway, type TestGateway } from "./test-gateway.js";
import { makeTestPki, type TestPki } from "./test-pki.js";

/** A test gateway serving mutual TLS on its own throwaway CA, with one bearer token. */
export interface MtlsTestGateway {
  gateway: TestGateway;
  pki: TestPki;
  /** The bearer token, with the roles asked for, on every queue. */
  token: string;
  /** What a TypeScript client passes as `tls`: the CA to trust and the client certificate. */
  tls: { ca: string; cert: string; key: string };
  /** Stops the gateway and removes the CA's files. */
  stop(): Promise<void>;
}

/** Starts a gateway with TLS and client certificates from a fresh CA, and a token named `name`. */
export async function startMtlsTestGateway(
  name: string,
  roles: Role[],
  config: Partial<Config> = {},
): Promise<MtlsTestGateway> {
  const pki = makeTestPki();
  const token = newToken();
  const gateway = await startTestGateway({
    config: {
      ...config,
      tlsCertFile: pki.server.certFile,
      tlsKeyFile: pki.server.keyFile,
      tlsClientCaFile: pki.caFile,
      tokens: [{ name, roles, queues: null, sha256: hashToken(token) }],
    },
  });
  return {
    gateway,
    pki,
    token,
    tls: { ca: pki.ca, cert: pki.client.cert, key: pki.client.key },
    stop: async () => {
      await gateway.stop();
      pki.remove();
    },
  };
}
