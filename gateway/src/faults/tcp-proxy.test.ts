import { once } from "node:events";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FaultProxy } from "./tcp-proxy.js";

/** An echo server and a proxy in front of it; `connect()` opens a client through the proxy. */
async function setup() {
  const echo: Server = createServer((s) => s.on("error", () => {}).pipe(s));
  echo.listen(0, "127.0.0.1");
  await once(echo, "listening");
  const proxy = await FaultProxy.start({
    host: "127.0.0.1",
    port: (echo.address() as { port: number }).port,
  });
  const sockets: Socket[] = [];
  const connect = async () => {
    const s = createConnection({ host: "127.0.0.1", port: proxy.port });
    s.setEncoding("utf8");
    s.on("error", () => {});
    sockets.push(s);
    await once(s, "connect");
    return s;
  };
  const close = async () => {
    for (const s of sockets) s.destroy();
    await proxy.close();
    echo.close();
  };
  return { proxy, connect, close };
}

/** The next data on `s`, or "timeout" after `ms`. */
async function nextData(s: Socket, ms: number): Promise<string> {
  return Promise.race([
    once(s, "data").then(([d]) => d as string),
    new Promise<string>((r) => setTimeout(() => r("timeout"), ms)),
  ]);
}

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

describe("FaultProxy", () => {
  it("passes traffic both ways", async () => {
    const t = await setup();
    cleanup = t.close;
    const s = await t.connect();
    s.write("ping");
    expect(await nextData(s, 2000)).toBe("ping");
    expect(t.proxy.connections).toBe(1);
  });

  it("stalls without closing, then delivers what waited once passing again", async () => {
    const t = await setup();
    cleanup = t.close;
    const s = await t.connect();
    t.proxy.stall();
    s.write("held");
    expect(await nextData(s, 300)).toBe("timeout");
    expect(s.destroyed).toBe(false);
    t.proxy.pass();
    expect(await nextData(s, 2000)).toBe("held");
  });

  it("cuts open connections and resets new ones until passing again", async () => {
    const t = await setup();
    cleanup = t.close;
    const s = await t.connect();
    const closed = new Promise((r) => s.once("close", r));
    t.proxy.cut();
    await closed;
    expect(t.proxy.connections).toBe(0);
    const refused = createConnection({ host: "127.0.0.1", port: t.proxy.port });
    refused.on("error", () => {});
    refused.write("lost");
    await new Promise((r) => refused.once("close", r));
    expect(t.proxy.connections).toBe(0);
    t.proxy.pass();
    const again = await t.connect();
    again.write("back");
    expect(await nextData(again, 2000)).toBe("back");
  });

  it("slows each chunk by the delay, keeping order", async () => {
    const t = await setup();
    cleanup = t.close;
    const s = await t.connect();
    t.proxy.slow(150);
    const started = Date.now();
    s.write("slow");
    let got = "";
    while (got.length < 4) {
      const d = await nextData(s, 3000);
      if (d === "timeout") break;
      got += d;
    }
    expect(got).toBe("slow");
    // Two hops (to the echo server and back), each delayed.
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
  });
});
