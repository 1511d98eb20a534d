import { networkInterfaces } from "node:os";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { listenOnPorts } from "./listeners.js";

// The URLs a gateway reports (and logs at start) name the address it listens on: a wildcard bind is
// shown as the wildcard, never as loopback, which would say it cannot be reached from elsewhere.

const hello = (_req: unknown, res: { end: (body: string) => void }) => res.end("hello");
const hasIpv6 = Object.values(networkInterfaces()).some((list) => list?.some((i) => i.family === "IPv6"));

async function urlsFor(host: string): Promise<{ grpcUrl: string; httpUrl: string; body: string }> {
  const config = { ...loadConfig("dev", {}), grpcPort: 0, httpPort: 0, host };
  const listeners = await listenOnPorts(config, null, hello, hello);
  try {
    // Reachable at that URL from this machine too.
    const body = await (await fetch(listeners.httpUrl)).text();
    return { grpcUrl: listeners.grpcUrl, httpUrl: listeners.httpUrl, body };
  } finally {
    await listeners.close();
  }
}

describe("listenOnPorts", () => {
  it("names a 0.0.0.0 bind as 0.0.0.0, not 127.0.0.1", async () => {
    const urls = await urlsFor("0.0.0.0");
    expect(urls.grpcUrl).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    expect(urls.httpUrl).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    expect(urls.body).toBe("hello");
  });

  it.skipIf(!hasIpv6)("names a :: bind as [::]", async () => {
    expect((await urlsFor("::")).grpcUrl).toMatch(/^http:\/\/\[::\]:\d+$/);
  });

  it("names a loopback bind as loopback", async () => {
    expect((await urlsFor("127.0.0.1")).grpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});
