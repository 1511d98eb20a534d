import { connect as tlsConnect } from "node:tls";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { Client, createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcStubs, unary } from "../testing/grpc-stubs.js";
import { httpsGet } from "../testing/https-get.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { makeTestPki, type TestPki } from "../testing/test-pki.js";

// TLS on both ports from PEM files: gRPC, Connect and gRPC-Web over HTTP/2 by ALPN on one, HTTPS with
// health, metrics and the console on the other, each reached by a client trusting only the test's CA.

let pki: TestPki;
let gw: TestGateway;
beforeAll(async () => {
  pki = makeTestPki();
  gw = await startTestGateway({
    config: { tlsCertFile: pki.server.certFile, tlsKeyFile: pki.server.keyFile },
  });
});
afterAll(async () => {
  await gw?.stop();
  pki?.remove();
});

describe("TLS on both ports", () => {
  it("names https URLs and negotiates HTTP/2 by ALPN on the gRPC port", async () => {
    expect(gw.grpcUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(gw.httpUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const { port } = new URL(gw.grpcUrl);
    const alpn = await new Promise<string | false>((resolve, reject) => {
      const s = tlsConnect({
        host: "127.0.0.1",
        port: Number(port),
        ca: pki.ca,
        ALPNProtocols: ["h2", "http/1.1"],
      });
      s.on("secureConnect", () => {
        resolve(s.alpnProtocol ?? false);
        s.end();
      });
      s.on("error", reject);
    });
    expect(alpn).toBe("h2");
  });

  it("serves gRPC (the SDK), Connect and gRPC-Web on the gRPC port", async () => {
    const client = new Client({ baseUrl: gw.grpcUrl, tls: { ca: pki.ca } });
    const { jobId } = await client.enqueue({ queue: "tls", payload: "over tls" });
    expect((await client.getJob(jobId)).queue).toBe("tls");
    const nodeOptions = { ca: pki.ca };
    for (const transport of [
      createTransport({ baseUrl: gw.grpcUrl, tls: { ca: pki.ca } }),
      createConnectTransport({ baseUrl: gw.grpcUrl, httpVersion: "2", nodeOptions }),
      createGrpcWebTransport({ baseUrl: gw.grpcUrl, httpVersion: "2", nodeOptions }),
    ]) {
      expect((await createClient(AdminService, transport).whoAmI({})).actor).toBe("anonymous");
    }
  });

  it("serves plain @grpc/grpc-js stubs that trust the CA", async () => {
    const stubs = grpcStubs(gw.grpcUrl, undefined, { ca: pki.ca });
    try {
      expect(await unary(stubs.admin, "WhoAmI", {})).toMatchObject({ actor: "anonymous" });
    } finally {
      stubs.close();
    }
  });

  it("serves health, readiness (naming the mode), metrics, Connect JSON and the console over HTTPS", async () => {
    expect(await httpsGet(`${gw.httpUrl}/healthz`, pki.ca)).toMatchObject({
      status: 200,
      body: expect.stringMatching(/^\{"status":"ok","version":"[^"]+"\}\n$/),
    });
    expect(await httpsGet(`${gw.httpUrl}/readyz`, pki.ca)).toEqual({
      status: 200,
      body: "ready\ntransport: tls\n",
    });
    const metrics = await httpsGet(`${gw.httpUrl}/metrics`, pki.ca);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain("taskq_open_streams");
    expect((await httpsGet(`${gw.httpUrl}/console/`, pki.ca)).status).toBe(200);
    const json = createConnectTransport({
      baseUrl: gw.httpUrl,
      httpVersion: "1.1",
      nodeOptions: { ca: pki.ca },
    });
    expect((await createClient(AdminService, json).whoAmI({})).actor).toBe("anonymous");
  });

  it("refuses clients that do not trust its CA, and plaintext", async () => {
    await expect(httpsGet(`${gw.httpUrl}/healthz`, makeTestPki().ca)).rejects.toThrow(/certificate/);
    await expect(fetch(`${gw.httpUrl.replace("https:", "http:")}/healthz`)).rejects.toThrow();
  });
});
