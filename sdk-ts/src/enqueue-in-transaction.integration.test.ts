import { Code } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { context, ROOT_CONTEXT, TraceFlags, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { haveService, startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, type EnqueueSpec } from "./client.js";
import { enqueueBatchInTransaction, enqueueInTransaction } from "./enqueue-in-transaction.js";

// enqueueInTransaction with node-postgres against a gateway's Postgres: the job is the one Client.enqueue
// would have made (payload bytes, content type, options, headers), it exists only if the transaction
// commits, and the database names a bad field.
describe.runIf(haveService("postgres") && haveService("redis"))(
  "enqueueInTransaction (node-postgres)",
  () => {
    let gateway: TestGateway;
    let client: Client;
    let pool: pg.Pool;
    beforeAll(async () => {
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      gateway = await startTestGateway({ engine: "postgres" });
      client = new Client({
        baseUrl: gateway.grpcUrl,
        transport: createGrpcTransport({ baseUrl: gateway.grpcUrl }),
      });
      pool = new pg.Pool({ connectionString: gateway.databaseUrl ?? "", max: 2 });
      await pool.query("create table orders (id serial primary key, item text not null)");
    }, 60_000);
    afterAll(async () => {
      context.disable();
      client?.close();
      await pool?.end();
      await gateway?.stop();
    });

    /** Runs `fn` in a transaction on one pooled connection; commits unless told to roll back. */
    const inTransaction = async <T>(fn: (db: pg.PoolClient) => Promise<T>, rollback = false) => {
      const db = await pool.connect();
      try {
        await db.query("begin");
        const out = await fn(db);
        await db.query(rollback ? "rollback" : "commit");
        return out;
      } catch (err) {
        await db.query("rollback");
        throw err;
      } finally {
        db.release();
      }
    };
    const job = async (id: string) => {
      const j = await client.getJob(id);
      return {
        queue: j.queue,
        payload: Buffer.from(j.payload).toString("hex"),
        contentType: j.contentType,
        priority: j.priority,
        flowKey: j.flowKey,
        maxAttempts: j.maxAttempts,
        headers: j.headers,
      };
    };

    it("makes the job Client.enqueue makes, for bytes, text and JSON payloads and every option", async () => {
      const specs: EnqueueSpec[] = [
        { queue: "sdk-sql", payload: new Uint8Array([0, 1, 255]) },
        { queue: "sdk-sql", payload: "héllo" },
        { queue: "sdk-sql", payload: { to: "ada", n: [1, 2] } },
        {
          queue: "sdk-sql",
          payload: { x: 1 },
          contentType: "application/vnd.x+json",
          priority: 7,
          flowKey: "tenant-9",
          delayMs: 60_000,
          ttlSeconds: 3600,
          maxAttempts: 4,
          headers: { tenant: "t9" },
        },
        { queue: "sdk-sql", runAt: new Date("2031-01-02T03:04:05.678Z") },
      ];
      const viaSql = await inTransaction(async (db) => {
        await db.query("insert into orders (item) values ('book')");
        return enqueueBatchInTransaction(db, specs);
      });
      const viaRpc = await client.enqueueBatch(specs);
      expect(viaSql.map((r) => r.duplicate)).toEqual([false, false, false, false, false]);
      for (const [i, r] of viaSql.entries()) {
        expect(await job(r.jobId), `job ${i}`).toEqual(await job(viaRpc[i]?.jobId ?? ""));
      }
      const scheduled = await client.getJob(viaSql[4]?.jobId ?? "");
      expect(scheduled.runAt?.seconds).toBe(BigInt(Date.parse("2031-01-02T03:04:05Z") / 1000));
    });

    it("carries the active span's traceparent, as Client.enqueue does", async () => {
      const traceId = "0af7651916cd43dd8448eb211c80319c";
      const spanId = "b7ad6b7169203331";
      const active = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED });
      const { jobId } = await context.with(active, () =>
        inTransaction((db) =>
          enqueueInTransaction(db, { queue: "sdk-sql", payload: {}, headers: { a: "1" } }),
        ),
      );
      expect((await client.getJob(jobId)).headers).toEqual({
        a: "1",
        traceparent: `00-${traceId}-${spanId}-01`,
      });
    });

    it("a rolled-back transaction leaves no job; an idempotency key answers with the first job", async () => {
      const gone = await inTransaction(
        (db) => enqueueInTransaction(db, { queue: "sdk-sql", payload: {} }),
        true,
      );
      await expect(client.getJob(gone.jobId)).rejects.toMatchObject({ code: Code.NotFound });
      const first = await inTransaction((db) =>
        enqueueInTransaction(db, { queue: "sdk-sql", idempotencyKey: "order-1" }),
      );
      const again = await inTransaction((db) =>
        enqueueInTransaction(db, { queue: "sdk-sql", idempotencyKey: "order-1", payload: "other" }),
      );
      expect(first.duplicate).toBe(false);
      expect(again).toEqual({ jobId: first.jobId, duplicate: true });
      expect(first.jobId).toMatch(/^[1-9][0-9]*$/);
    });

    it("rejects with the database's error naming the field, and writes nothing of the batch", async () => {
      const err = await inTransaction((db) =>
        enqueueBatchInTransaction(db, [
          { queue: "sdk-bad", payload: {} },
          { queue: "sdk-bad", priority: 40_000 },
        ]),
      ).catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: "22023",
        message: "jobs[1].priority must be from -32768 to 32767 (got 40000)",
      });
      expect(
        (await pool.query("select count(*)::int as n from taskq.jobs where queue = 'sdk-bad'")).rows,
      ).toEqual([{ n: 0 }]);
      await expect(enqueueInTransaction(pool, { queue: "x", delayMs: 1, runAt: new Date() })).rejects.toThrow(
        "give delayMs or runAt, not both",
      );
    });
  },
);
