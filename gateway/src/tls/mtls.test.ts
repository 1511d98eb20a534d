import { Code, type ConnectError, createClient } from "@connectrpc/connect";
import { Client, createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcStubs, unary } from "../testing/grpc-stubs.js";
import { httpsGet } from "../testing/https-get.js";
import { type MtlsTestGateway, startMtlsTestGateway } from "../testing/mtls-gateway.js";
import type { TestGateway } from "../testing/test-gateway.js";
import { makeTestPki, type TestPki } from "../testing/test-pki.js";

// Mutual TLS: a client without a certificate from the configured CA is refused in the handshake, before
// any RPC; one with a certificate still needs its bearer token (the certificate proves where the call
// comes from, the token what it may do). Probes reach /healthz and /readyz without a certificate.

let pki: TestPki;
let other: TestPki;
let gw: TestGateway;
let token: string;
let mtls: MtlsTestGateway;
beforeAll(async () => {
  other = makeTestPki();
  mtls = await startMtlsTestGateway("mtls", ["producer", "operator"]);
  ({ gateway: gw, pki, token } = mtls);
});
afterAll(async () => {
  await mtls?.stop();
  other?.remove();
});

const denied = async () => (await gw.metrics.authDenied.get()).values.reduce((n, v) => n + v.value, 0);
const whoAmI = (tls: { ca: string; cert?: string; key?: string }, withToken = true) =>
  createClient(
    AdminService,
    createTransport({ baseUrl: gw.grpcUrl, token: withToken ? token : undefined, tls }),
  ).whoAmI({});

describe("mutual TLS", () => {
  it("serves a client with a certificate from the CA and its token", async () => {
    const tls = { ca: pki.ca, cert: pki.client.cert, key: pki.client.key };
    expect((await whoAmI(tls)).actor).toBe("mtls");
    const client = new Client({ baseUrl: gw.grpcUrl, token, tls });
    expect((await client.enqueue({ queue: "mtls", payload: "x" })).jobId).toBeTruthy();
    const stubs = grpcStubs(gw.grpcUrl, token, tls);
    try {
      expect(await unary(stubs.admin, "WhoAmI", {})).toMatchObject({ actor: "mtls" });
    } finally {
      stubs.close();
    }
  });

  it("refuses a client without a certificate, or with one from another CA, before any RPC", async () => {
    const before = await denied();
    // The TLS alert reaches the client as a transport error (INTERNAL, CANCELED or UNAVAILABLE by timing
    // in connect-node), never as a status from the gateway's token check.
    for (const tls of [{ ca: pki.ca }, { ca: pki.ca, cert: other.client.cert, key: other.client.key }]) {
      const err = await whoAmI(tls).then(
        () => null,
        (e: ConnectError) => e,
      );
      expect(err?.code).toBeOneOf([Code.Internal, Code.Canceled, Code.Unavailable]);
    }
    const stubs = grpcStubs(gw.grpcUrl, token, { ca: pki.ca });
    try {
      await expect(unary(stubs.admin, "WhoAmI", {})).rejects.toMatchObject({ code: 14 /* UNAVAILABLE */ });
    } finally {
      stubs.close();
    }
    // Refused in the handshake: no call reached the token check.
    expect(await denied()).toBe(before);
  });

  it("still requires the bearer token from a client with a certificate", async () => {
    await expect(
      whoAmI({ ca: pki.ca, cert: pki.client.cert, key: pki.client.key }, false),
    ).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
  });

  it("refuses the HTTP port's API without a certificate, but answers the probes", async () => {
    expect(await httpsGet(`${gw.httpUrl}/readyz`, pki.ca)).toEqual({
      status: 200,
      body: "ready\ntransport: mtls\n",
    });
    expect((await httpsGet(`${gw.httpUrl}/healthz`, pki.ca)).status).toBe(200);
    expect(await httpsGet(`${gw.httpUrl}/metrics`, pki.ca)).toEqual({
      status: 401,
      body: "a client certificate is required\n",
    });
    expect((await httpsGet(`${gw.httpUrl}/console/`, pki.ca)).status).toBe(401);
    const client = { cert: pki.client.cert, key: pki.client.key };
    expect((await httpsGet(`${gw.httpUrl}/metrics`, pki.ca, client)).status).toBe(200);
  });

  it("says on the HTTP port that a certificate from another CA is not trusted, not that none came", async () => {
    const stranger = { cert: other.client.cert, key: other.client.key };
    expect(await httpsGet(`${gw.httpUrl}/metrics`, pki.ca, stranger)).toEqual({
      status: 401,
      body: "the client certificate is not trusted: it is not signed by a CA this gateway trusts (tlsClientCaFile)\n",
    });
  });
});
