import { PGlite } from "@electric-sql/pglite";
import pg from "pg";

/** A named SQL statement; the name lets Postgres keep it prepared per connection. */
export interface Sql {
  readonly name: string;
  readonly text: string;
}

/**
 * The one seam between the store and a database engine. Postgres (through `pg`) and PGlite both run
 * the same SQL, so everything above this interface is shared.
 */
export interface Db {
  query<R extends object>(sql: Sql, params?: readonly unknown[]): Promise<R[]>;
  /** Runs a multi-statement script (migrations). */
  exec(script: string): Promise<void>;
  /** Runs `fn` in one transaction on one connection; rolls back if it throws. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  /**
   * LISTENs on channels; on a pooled Postgres this uses one dedicated session connection. `onLost`
   * is called once if that connection drops; the caller listens again.
   */
  listen(
    channels: readonly string[],
    onNotify: (channel: string, payload: string) => void,
    onLost?: (err: Error) => void,
  ): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Options for a Postgres connection pool. */
export interface PostgresDbOptions {
  url: string;
  /** Most pooled connections this process opens (LISTEN takes one more). */
  poolSize: number;
}

type Queryable = pg.Pool | pg.PoolClient;

class PgDb implements Db {
  private readonly listeners: pg.Client[] = [];
  constructor(
    private readonly conn: Queryable,
    private readonly options: PostgresDbOptions,
  ) {}

  async query<R extends object>(sql: Sql, params: readonly unknown[] = []): Promise<R[]> {
    const res = await this.conn.query({ name: sql.name, text: sql.text, values: params as unknown[] });
    return res.rows as R[];
  }

  async exec(script: string): Promise<void> {
    await this.conn.query(script);
  }

  async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    if (!(this.conn instanceof pg.Pool)) return fn(this);
    const client = await this.conn.connect();
    try {
      await client.query("begin");
      const result = await fn(new PgDb(client, this.options));
      await client.query("commit");
      return result;
    } catch (err) {
      await client.query("rollback").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  async listen(
    channels: readonly string[],
    onNotify: (channel: string, payload: string) => void,
    onLost?: (err: Error) => void,
  ): Promise<() => Promise<void>> {
    const client = new pg.Client({ connectionString: this.options.url, application_name: "taskq-listen" });
    let lost = false;
    let listening = false;
    const lose = (err: Error) => {
      if (lost) return;
      lost = true;
      const at = this.listeners.indexOf(client);
      if (at >= 0) this.listeners.splice(at, 1);
      // Until LISTEN is set up the caller learns of a failure from the rejection alone: a failed connect
      // also emits "end", and reporting it both ways started two retry loops per failure, doubling
      // every retry through an outage into a flood of connections when Postgres came back.
      if (listening) onLost?.(err);
    };
    client.on("error", lose);
    client.on("end", () => lose(new Error("LISTEN connection ended")));
    try {
      await client.connect();
      client.on("notification", (msg) => onNotify(msg.channel, msg.payload ?? ""));
      for (const channel of channels) await client.query(`listen ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      lost = true;
      await client.end().catch(() => {});
      throw err;
    }
    listening = true;
    this.listeners.push(client);
    return async () => {
      lost = true;
      const at = this.listeners.indexOf(client);
      if (at >= 0) this.listeners.splice(at, 1);
      await client.end().catch(() => {});
    };
  }

  async close(): Promise<void> {
    for (const c of this.listeners.splice(0)) {
      c.removeAllListeners("end");
      c.removeAllListeners("error");
      await c.end().catch(() => {});
    }
    if (this.conn instanceof pg.Pool) await this.conn.end();
  }
}

/** A pooled Postgres connection (production mode). */
export function postgresDb(options: PostgresDbOptions, onPoolError?: (err: Error) => void): Db {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    application_name: "taskq",
    // A broken connection must not wait forever; the caller sees an error and retries.
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client erroring (server restart, terminated backend) must not crash the process.
  pool.on("error", (err) => onPoolError?.(err));
  return new PgDb(pool, options);
}

class PgliteDb implements Db {
  constructor(private readonly db: PGlite | Parameters<Parameters<PGlite["transaction"]>[0]>[0]) {}

  async query<R extends object>(sql: Sql, params: readonly unknown[] = []): Promise<R[]> {
    const res = await this.db.query<R>(sql.text, params as unknown[]);
    return res.rows;
  }

  async exec(script: string): Promise<void> {
    await this.db.exec(script);
  }

  async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    if (!(this.db instanceof PGlite)) return fn(this);
    return this.db.transaction((tx) => fn(new PgliteDb(tx)));
  }

  async listen(
    channels: readonly string[],
    onNotify: (channel: string, payload: string) => void,
  ): Promise<() => Promise<void>> {
    const db = this.db;
    if (!(db instanceof PGlite)) throw new Error("listen inside a transaction");
    const stops = await Promise.all(channels.map((c) => db.listen(c, (payload) => onNotify(c, payload))));
    return async () => {
      for (const stop of stops) await stop();
    };
  }

  async close(): Promise<void> {
    if (this.db instanceof PGlite) await this.db.close();
  }
}

/** Embedded Postgres (PGlite); `dataDir` undefined keeps everything in memory. */
export async function pgliteDb(dataDir?: string): Promise<Db> {
  const db = await PGlite.create(dataDir);
  return new PgliteDb(db);
}
