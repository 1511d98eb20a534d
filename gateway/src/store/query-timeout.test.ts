// dbQueryTimeoutMs on a real Postgres reached through a FaultProxy: a stalled connection fails its query
// within the bound and is never reused, a slow statement is cancelled by Postgres, migrations are not
// bound, and a silent LISTEN connection is noticed and reported lost.
import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it, vi } from "vitest";
import { toConnectError } from "../errors.js";
import { FaultProxy } from "../faults/tcp-proxy.js";
import { haveService, testServices } from "../testing/services.js";
import { type Db, DbTimeoutError, LISTEN_CHECK_MS, postgresDb, QUERY_TIMEOUT_SLACK_MS } from "./db.js";

const BOUND_MS = 300;

async function setup(poolSize = 1) {
  const url = new URL(testServices.postgresUrl);
  const proxy = await FaultProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
  const timeouts: DbTimeoutError[] = [];
  const db: Db = postgresDb({
    url: proxy.rewrite(url.toString()),
    poolSize,
    queryTimeoutMs: BOUND_MS,
    onTimeout: (err) => timeouts.push(err),
  });
  const close = async () => {
    await db.close();
    await proxy.close();
  };
  return { proxy, db, timeouts, close };
}

const text = (s: string) => ({ name: "", text: `select '${s}'::text as v` });

async function timed<T>(p: Promise<T>): Promise<{ ms: number; err?: unknown; value?: T }> {
  const started = Date.now();
  try {
    const value = await p;
    return { ms: Date.now() - started, value };
  } catch (err) {
    return { ms: Date.now() - started, err };
  }
}

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

describe.skipIf(!haveService("postgres"))("dbQueryTimeoutMs on Postgres", () => {
  it("fails a query on a stalled connection within the bound, and never reuses that connection", async () => {
    const t = await setup();
    cleanup = t.close;
    expect(await t.db.query(text("warm"))).toEqual([{ v: "warm" }]);
    t.proxy.stall();
    const stalled = await timed(t.db.query(text("a")));
    expect(stalled.err).toBeInstanceOf(DbTimeoutError);
    expect((stalled.err as Error).message).toMatch(/did not answer within 800 ms/);
    expect(stalled.ms).toBeLessThan(BOUND_MS + QUERY_TIMEOUT_SLACK_MS + 1000);
    expect(toConnectError(stalled.err).code).toBe(Code.Unavailable);
    expect(t.timeouts.length).toBeGreaterThan(0);
    t.proxy.pass();
    // Pool of one: had the timed-out connection gone back to the pool, this would read 'a'.
    expect(await t.db.query(text("b"))).toEqual([{ v: "b" }]);
    expect(t.proxy.connections).toBe(1);
  });

  it("discards a transaction's connection whose query timed out", async () => {
    const t = await setup();
    cleanup = t.close;
    expect(await t.db.query(text("warm"))).toEqual([{ v: "warm" }]);
    t.proxy.stall();
    const stalled = await timed(t.db.transaction((tx) => tx.query(text("a"))));
    expect(stalled.err).toBeInstanceOf(DbTimeoutError);
    // begin and one query at most; no rollback waited on a dead connection.
    expect(stalled.ms).toBeLessThan(2 * (BOUND_MS + QUERY_TIMEOUT_SLACK_MS) + 1000);
    t.proxy.pass();
    expect(await t.db.transaction((tx) => tx.query(text("b")))).toEqual([{ v: "b" }]);
    expect(await t.db.query(text("c"))).toEqual([{ v: "c" }]);
    expect(t.proxy.connections).toBe(1);
  });

  it("has Postgres cancel a statement that runs past the bound, and keeps the connection", async () => {
    const t = await setup();
    cleanup = t.close;
    const slow = await timed(t.db.query({ name: "", text: "select pg_sleep(3)" }));
    expect(slow.err).toBeInstanceOf(DbTimeoutError);
    expect((slow.err as Error).message).toMatch(/cancelled a statement/);
    expect(slow.ms).toBeLessThan(BOUND_MS + QUERY_TIMEOUT_SLACK_MS);
    expect(toConnectError(slow.err).code).toBe(Code.Unavailable);
    const inTx = await timed(t.db.transaction((tx) => tx.query({ name: "", text: "select pg_sleep(3)" })));
    expect(inTx.err).toBeInstanceOf(DbTimeoutError);
    expect(await t.db.query(text("after"))).toEqual([{ v: "after" }]);
  });

  it("does not bound a session or its transactions (migrations)", async () => {
    const t = await setup();
    cleanup = t.close;
    const rows = await t.db.session((s) =>
      s.transaction((tx) => tx.query({ name: "", text: "select pg_sleep(0.6), 1 as n" })),
    );
    expect(rows).toMatchObject([{ n: 1 }]);
  });

  it("takes a shorter bound for one query", async () => {
    const t = await setup();
    cleanup = t.close;
    expect(await t.db.query(text("warm"))).toEqual([{ v: "warm" }]);
    t.proxy.stall();
    const probe = await timed(t.db.query(text("probe"), [], { timeoutMs: 100 }));
    expect(probe.err).toBeInstanceOf(DbTimeoutError);
    expect(probe.ms).toBeLessThan(BOUND_MS);
  });

  it("fails a connection attempt to a stalled server within the bound (UNAVAILABLE)", async () => {
    const t = await setup();
    cleanup = t.close;
    t.proxy.stall();
    const connecting = await timed(t.db.query(text("a")));
    // Connecting is bounded by the timeout too, but never below 1 s.
    expect(connecting.ms).toBeLessThan(1000 + 1000);
    expect(toConnectError(connecting.err).code).toBe(Code.Unavailable);
  });

  it("reports a silent LISTEN connection lost", { timeout: 20_000 }, async () => {
    const t = await setup();
    cleanup = t.close;
    const onLost = vi.fn();
    await t.db.listen(["taskq_listen_stall_test"], () => {}, onLost);
    t.proxy.stall();
    await vi.waitFor(() => expect(onLost).toHaveBeenCalled(), {
      timeout: LISTEN_CHECK_MS + 1000 + 2000,
      interval: 50,
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(onLost).toHaveBeenCalledTimes(1);
  });
});
