// What every fault scenario stands on: a fresh database of its own on the shared Postgres, and a
// FaultProxy in front of Postgres and one in front of Redis, so faults reach only this scenario.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { freshPostgres, testServices } from "../testing/services.js";
import { FaultProxy } from "./tcp-proxy.js";

export interface FaultEnv {
  /** The scenario's database, reached directly (for reading the final state and for admin). */
  databaseUrl: string;
  /**
   * What every gateway of this scenario is started with: the database and Redis through `pgProxy` and
   * `redisProxy`, and a limiter key prefix of its own, so its limits never mix with another test's.
   */
  gateway: { databaseUrl: string; redisUrl: string; redisPrefix: string };
  pgProxy: FaultProxy;
  redisProxy: FaultProxy;
  /** pg_terminate_backend of every backend of THIS database only; returns how many were ended. */
  terminateBackends(): Promise<number>;
  close(): Promise<void>;
}

function target(url: string, defaultPort: number) {
  const u = new URL(url);
  return { host: u.hostname || "127.0.0.1", port: Number(u.port || defaultPort) };
}

export async function startFaultEnv(): Promise<FaultEnv> {
  // Both through the guard: the scenario's file asked haveService("postgres") and haveService("redis").
  const redisUrl = testServices.redisUrl;
  const db = await freshPostgres();
  const pgProxy = await FaultProxy.start(target(db.url, 5432));
  const redisProxy = await FaultProxy.start(target(redisUrl, 6379));
  const dbName = new URL(db.url).pathname.slice(1);
  const proxiedDatabaseUrl = pgProxy.rewrite(db.url);
  const proxiedRedisUrl = redisProxy.rewrite(redisUrl);
  return {
    databaseUrl: db.url,
    gateway: {
      databaseUrl: proxiedDatabaseUrl,
      redisUrl: proxiedRedisUrl,
      redisPrefix: `taskq-faults-${randomBytes(4).toString("hex")}:`,
    },
    pgProxy,
    redisProxy,
    terminateBackends: async () => {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      try {
        const r = await c.query(
          "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
          [dbName],
        );
        return r.rowCount ?? 0;
      } finally {
        await c.end();
      }
    },
    close: async () => {
      await pgProxy.close();
      await redisProxy.close();
      await db.drop();
    },
  };
}
