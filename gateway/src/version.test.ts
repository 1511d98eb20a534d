import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { VERSION_HEADER } from "@taskq/sdk";
import { ProducerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import gatewayPackage from "../package.json" with { type: "json" };
import { startTestGateway, type TestGateway } from "./testing/test-gateway.js";
import { GATEWAY_VERSION } from "./version.js";

describe("the gateway's version", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it("is its package's", () => {
    expect(GATEWAY_VERSION).toBe(gatewayPackage.version);
  });

  it("is on /healthz and in the header of every HTTP response", async () => {
    const health = await fetch(`${gw.httpUrl}/healthz`);
    expect(await health.json()).toEqual({ status: "ok", version: GATEWAY_VERSION });
    expect(health.headers.get(VERSION_HEADER)).toBe(GATEWAY_VERSION);
    expect((await fetch(`${gw.httpUrl}/readyz`)).headers.get(VERSION_HEADER)).toBe(GATEWAY_VERSION);
    expect((await fetch(`${gw.httpUrl}/no-such-page`)).headers.get(VERSION_HEADER)).toBe(GATEWAY_VERSION);
  });

  it("is in the response headers of gRPC calls", async () => {
    const seen: Array<string | null> = [];
    const transport = createGrpcTransport({
      baseUrl: gw.grpcUrl,
      interceptors: [
        (next) => async (req) => {
          const res = await next(req);
          seen.push(res.header.get(VERSION_HEADER));
          return res;
        },
      ],
    });
    await createClient(ProducerService, transport).enqueue({ job: { queue: "versions" } });
    expect(seen).toEqual([GATEWAY_VERSION]);
  });
});
