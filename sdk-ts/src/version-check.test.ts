import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "./client.js";
import { ProducerService } from "./gen/taskq/v1/producer_pb.js";
import type { Logger } from "./logger.js";
import { CONTRACT_VERSION, VERSION_HEADER } from "./version.js";

/** A gateway stand-in that answers Enqueue and reports `version` in the header a gateway sends. */
async function fakeGateway(version: string): Promise<{ url: string; close: () => Promise<void> }> {
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(ProducerService, {
        enqueue: () => ({ jobId: "1", duplicate: false }),
      }),
  });
  const server = http2.createServer((req, res) => {
    res.setHeader(VERSION_HEADER, version);
    handler(req, res);
  });
  // The clients keep their HTTP/2 sessions open: close ends them, or server.close would wait for them.
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => sessions.add(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((r) => {
      server.close(() => r());
      for (const s of sessions) s.destroy();
    });
  return { url: `http://127.0.0.1:${port}`, close };
}

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const noop = () => {};
  return {
    warnings,
    debug: noop,
    info: noop,
    error: noop,
    warn: (_fields, message) => warnings.push(message),
  };
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

describe("a gateway older than the SDK's contract", () => {
  it("is reported once, with both versions, however many calls and clients", async () => {
    const gw = await fakeGateway("0.0.9");
    closers.push(gw.close);
    const logger = recordingLogger();
    const a = new Client({ baseUrl: gw.url, logger });
    await a.enqueue({ queue: "q" });
    await a.enqueue({ queue: "q" });
    await new Client({ baseUrl: gw.url, logger }).enqueue({ queue: "q" });
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toContain("version 0.0.9, older than the contract");
    expect(logger.warnings[0]).toContain(CONTRACT_VERSION);
  });

  it("is not reported when the gateway is as new as the contract, or newer", async () => {
    for (const version of [CONTRACT_VERSION, "99.0.0"]) {
      const gw = await fakeGateway(version);
      closers.push(gw.close);
      const logger = recordingLogger();
      await new Client({ baseUrl: gw.url, logger }).enqueue({ queue: "q" });
      expect(logger.warnings).toEqual([]);
    }
  });
});
