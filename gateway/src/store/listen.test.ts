import { afterEach, describe, expect, it, vi } from "vitest";
import { FaultProxy } from "../faults/tcp-proxy.js";
import { haveService, testServices } from "../testing/services.js";
import { type Db, postgresDb } from "./db.js";

/** A Postgres Db reached through a FaultProxy, so a test can cut its connections. */
async function setup() {
  const url = new URL(testServices.postgresUrl);
  const proxy = await FaultProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
  const db: Db = postgresDb({ url: proxy.rewrite(url.toString()), poolSize: 1 });
  const close = async () => {
    await db.close();
    await proxy.close();
  };
  return { proxy, db, close };
}

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

describe.skipIf(!haveService("postgres"))("Db.listen on Postgres", () => {
  // Regression: a failed connect also emits "end", which reported the loss too, so the gateway's
  // LISTEN loop retried twice per failure: 2^n retries after n seconds of outage, then a flood of
  // connections (max_connections exhausted) when Postgres came back.
  it("rejects when it cannot connect, without also reporting a lost connection", async () => {
    const t = await setup();
    cleanup = t.close;
    t.proxy.cut();
    const onLost = vi.fn();
    await expect(t.db.listen(["taskq_listen_test"], () => {}, onLost)).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 200));
    expect(onLost).not.toHaveBeenCalled();
  });

  it("reports a connection lost after LISTEN once", async () => {
    const t = await setup();
    cleanup = t.close;
    const onLost = vi.fn();
    await t.db.listen(["taskq_listen_test"], () => {}, onLost);
    t.proxy.cut();
    await vi.waitFor(() => expect(onLost).toHaveBeenCalled(), { timeout: 5000 });
    await new Promise((r) => setTimeout(r, 200));
    expect(onLost).toHaveBeenCalledTimes(1);
  });
});
