// Gateways whose pool goes through PgBouncer (1.18, pool_mode = transaction) and whose LISTEN and
// migrations go straight to Postgres (databaseDirectUrl): three start on one database, every statement
// unnamed; the query timeout is set inside each statement's transaction, not at connect.
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client } from "@taskq/sdk";
import { WorkerService } from "@taskq/sdk/proto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../errors.js";
import { type LocalPgBouncer, PGBOUNCER, startPgBouncer } from "../testing/pgbouncer.js";
import { freshPostgres, haveCommand, haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { type Db, DbTimeoutError, postgresDb } from "./db.js";
import { startupError } from "./migrate.js";

// The gateways behind it use the test Redis for their limiters.
const ready =
  haveService("postgres") &&
  haveService("redis") &&
  haveCommand(PGBOUNCER, "install pgbouncer (Debian) to run them");

describe.runIf(ready)("behind PgBouncer in transaction pooling mode", () => {
  let bouncer: LocalPgBouncer;
  let fresh: Awaited<ReturnType<typeof freshPostgres>>;
  beforeAll(async () => {
    bouncer = await startPgBouncer();
    fresh = await freshPostgres();
  });
  afterAll(async () => {
    await bouncer?.stop();
    await fresh?.drop();
  });

  const pooled = (o: { pooler?: "none" | "transaction"; prepared?: boolean } = {}): Db =>
    postgresDb({
      url: bouncer.url(fresh.url),
      directUrl: fresh.url,
      poolSize: 4,
      queryTimeoutMs: 300,
      pooler: o.pooler ?? "transaction",
      preparedStatements: o.prepared ?? false,
    });

  it("starts three gateways, each claims, and a job enqueued on one wakes a worker waiting on another", async () => {
    const config = {
      databaseDirectUrl: fresh.url,
      dbPooler: "transaction" as const,
      dbPreparedStatements: false,
    };
    const gateways: TestGateway[] = [];
    try {
      for (let i = 0; i < 3; i++)
        gateways.push(await startTestGateway({ databaseUrl: bouncer.url(fresh.url), config }));
      const [a, b] = gateways as [TestGateway, TestGateway];
      const client = new Client({
        baseUrl: a.grpcUrl,
        transport: createGrpcTransport({ baseUrl: a.grpcUrl }),
      });
      const worker = createClient(WorkerService, createGrpcTransport({ baseUrl: b.grpcUrl }));
      // A long poll on b, then an enqueue on a: b hears of it through LISTEN on its direct connection.
      const started = Date.now();
      const claim = worker.claimOnce({ queues: ["pooled"], maxJobs: 1, maxWait: { seconds: 10n, nanos: 0 } });
      await sleep(300);
      await client.enqueue({ queue: "pooled", payload: { n: 1 } });
      const got = await claim;
      expect(got.jobs).toHaveLength(1);
      expect(Date.now() - started).toBeLessThan(5000);
      for (const g of gateways) {
        const w = createClient(WorkerService, createGrpcTransport({ baseUrl: g.grpcUrl }));
        await client.enqueue({ queue: "pooled", payload: {} });
        const r = await w.claimOnce({ queues: ["pooled"], maxJobs: 1, maxWait: { seconds: 5n, nanos: 0 } });
        expect(r.jobs).toHaveLength(1);
      }
    } finally {
      for (const g of gateways.reverse()) await g.stop();
    }
  });

  it("cancels a statement past the query timeout, set inside its transaction, and never leaks it", async () => {
    const db = pooled();
    try {
      const started = Date.now();
      const err = await db.query({ name: "", text: "select pg_sleep(5)" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DbTimeoutError);
      expect((err as Error).message).toMatch(
        /cancelled a statement that ran past dbQueryTimeoutMs \(300 ms\)/,
      );
      expect(Date.now() - started).toBeLessThan(3000);
      // The same in a transaction of the store's.
      const inTx = await db
        .transaction((tx) => tx.query({ name: "", text: "select pg_sleep(5)" }))
        .catch((e: unknown) => e);
      expect(inTx).toBeInstanceOf(DbTimeoutError);
      const [row] = await db.query<{ v: string }>({ name: "", text: "select 'after'::text as v" });
      expect(row?.v).toBe("after");
    } finally {
      await db.close();
    }
    // SET LOCAL ends with its transaction: another client of the same server connections sees no bound.
    const other = new pg.Client({ connectionString: bouncer.url(fresh.url) });
    await other.connect();
    try {
      for (let i = 0; i < 5; i++) {
        const r = await other.query<{ statement_timeout: string }>("show statement_timeout");
        expect(r.rows[0]?.statement_timeout).toBe("0");
      }
    } finally {
      await other.end();
    }
  });

  it("refuses the query timeout as a startup parameter, which is why the pooler setting exists", async () => {
    const db = pooled({ pooler: "none" });
    try {
      await expect(db.query({ name: "", text: "select 1" })).rejects.toThrow(/unsupported startup parameter/);
    } finally {
      await db.close();
    }
  });

  it("sends named statements where they work, unnamed ones where the pooler cannot keep them", async () => {
    const named = { name: "taskq_pooler_probe", text: "select 1 as one" };
    // Two pools through one PgBouncer share its server connections: named statements collide there.
    const [a, b] = [pooled({ prepared: true }), pooled({ prepared: true })];
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).query(named)),
      );
      expect(results.some((r) => r.status === "rejected")).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
    const [c, d] = [pooled(), pooled()];
    try {
      const rows = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? c : d).query(named)));
      expect(rows.every((r) => (r[0] as { one?: number })?.one === 1)).toBe(true);
    } finally {
      await c.close();
      await d.close();
    }
  });

  // Behind a transaction pooler every statement borrows a connection for its transaction: a reset
  // between two statements (the pooler restarting) once reached no 'error' listener and ended the process.
  it("survives the pooler restarting between two statements of a transaction, and reconnects", async () => {
    const db = pooled();
    try {
      const err = await db
        .transaction(async (tx) => {
          await tx.query({ name: "", text: "select 1" });
          await bouncer.restart(200);
          await sleep(100);
          return tx.query({ name: "", text: "select 2" });
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      const [row] = await db.query<{ v: number }>({ name: "", text: "select 3 as v" });
      expect(row?.v).toBe(3);
    } finally {
      await db.close();
    }
  });

  it("stops a gateway pointed at PgBouncer without the settings with one line saying what to set", async () => {
    const err = await startTestGateway({
      databaseUrl: bouncer.url(fresh.url),
      config: { databaseDirectUrl: fresh.url },
    })
      .then(async (g) => {
        await g.stop();
        return null;
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      /^databaseUrl \(TASKQ_DATABASE_URL\) goes through a pooler that refuses startup parameters .*: set dbPooler \(TASKQ_DB_POOLER\) to transaction/,
    );
    // The one-line advice for named statements colliding there, as Postgres words it.
    const collided = startupError({
      code: "42P05",
      message: 'prepared statement "taskq_db_clock" already exists',
    });
    expect(collided?.message).toMatch(/set dbPreparedStatements \(TASKQ_DB_PREPARED_STATEMENTS\) to false/);
  });

  it("runs LISTEN on the direct URL: a notification raised through the pooler arrives", async () => {
    const db = pooled();
    try {
      const heard: string[] = [];
      const stop = await db.listen(["taskq_pooler_test"], (_c, payload) => heard.push(payload));
      await db.query({ name: "", text: "select pg_notify('taskq_pooler_test', 'hello')" });
      const until = Date.now() + 5000;
      while (heard.length === 0 && Date.now() < until) await sleep(20);
      expect(heard).toEqual(["hello"]);
      await stop();
    } finally {
      await db.close();
    }
  });
});
