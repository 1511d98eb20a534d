import { mkdir } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { arrayLiteral } from "./array-literal.js";
import { lockDataDir } from "./data-dir-lock.js";

/** A SQL statement; a name lets Postgres keep it prepared per connection, "" plans it at each call. */
export interface Sql {
  readonly name: string;
  readonly text: string;
}

/**
 * The one seam between the store and a database engine. Postgres (through `pg`) and PGlite both run
 * the same SQL, so everything above this interface is shared.
 */
export interface Db {
  /** `opts.timeoutMs` waits less than the pool's query timeout for this one query (health probes). */
  query<R extends object>(sql: Sql, params?: readonly unknown[], opts?: { timeoutMs?: number }): Promise<R[]>;
  /** Runs a multi-statement script (migrations). */
  exec(script: string): Promise<void>;
  /** Runs `fn` in one transaction on one connection; rolls back if it throws. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` on one connection of its own without the query timeout (migrations: an index build may
   * take long, and so may the wait for another gateway's migration), closed after it. Everything `fn`
   * runs uses that connection, so a session-level advisory lock taken there holds across the
   * transactions `fn` runs through it. On PGlite, the one connection there is.
   */
  session<T>(fn: (session: Db) => Promise<T>): Promise<T>;
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
  /**
   * Postgres without a transaction pooler in between (databaseDirectUrl), for what needs a session of
   * its own: LISTEN and session() (the migrations' advisory lock). Default `url`.
   */
  directUrl?: string | undefined;
  /**
   * "transaction": `url` goes through a transaction pooler (PgBouncer, pool_mode = transaction), which
   * drops or refuses startup parameters, so the query timeout is set with SET LOCAL inside each
   * statement's transaction instead. Default "none".
   */
  pooler?: "none" | "transaction" | undefined;
  /**
   * false sends every statement unnamed (planned at each call), for a pooler that cannot keep prepared
   * statements across the server connections it hands out. Default true.
   */
  preparedStatements?: boolean | undefined;
  /** Most pooled connections this process opens (LISTEN takes one more). */
  poolSize: number;
  /**
   * Longest wait for any one query, ms (dbQueryTimeoutMs). Postgres cancels a statement running this
   * long (statement_timeout), so it rolls back; a connection with no answer QUERY_TIMEOUT_SLACK_MS later
   * (a stalled server or network) is destroyed, never reused. Undefined: no bound (tests).
   */
  queryTimeoutMs?: number | undefined;
  /** Told of every query that timed out (either side), for logging. */
  onTimeout?: ((err: DbTimeoutError) => void) | undefined;
}

/**
 * How much longer than statement_timeout the gateway waits for an answer before it gives the
 * connection up: past it, Postgres is not answering at all (its own cancel would have arrived).
 */
export const QUERY_TIMEOUT_SLACK_MS = 500;
/** The LISTEN connection is asked `select 1` this often, so a stalled one is noticed and replaced. */
export const LISTEN_CHECK_MS = 5000;
/** Most a LISTEN check, or a connection attempt, may take, ms (less when the query timeout is less). */
const CONNECT_TIMEOUT_MS = 5000;
/** ...but never less than this: a connection (TLS and all) may take a moment even when all is well. */
const MIN_CONNECT_TIMEOUT_MS = 1000;

/** The bound for connecting, waiting for a pooled connection, and LISTEN checks, for a query timeout. */
function connectTimeoutMs(queryTimeoutMs: number | undefined): number {
  if (queryTimeoutMs === undefined) return CONNECT_TIMEOUT_MS;
  return Math.min(CONNECT_TIMEOUT_MS, Math.max(MIN_CONNECT_TIMEOUT_MS, queryTimeoutMs));
}

/** A query Postgres did not answer in time: the server cancelled it, or the connection went silent. */
export class DbTimeoutError extends Error {
  override name = "DbTimeoutError";
  readonly code = "TASKQ_DB_TIMEOUT";
}

/** The error node-postgres gives when query_timeout passes with no answer. */
function isReadTimeout(err: unknown): boolean {
  return (err as Error | undefined)?.message === "Query read timeout";
}

/** 57014 is query_canceled: statement_timeout (or an operator's pg_cancel_backend). */
function isStatementTimeout(err: unknown): boolean {
  return (err as { code?: unknown } | undefined)?.code === "57014";
}

type Queryable = pg.Pool | pg.PoolClient | pg.Client;

class PgDb implements Db {
  private readonly listeners: pg.Client[] = [];
  private readonly listenChecks = new Set<NodeJS.Timeout>();
  /**
   * `conn` is the pool, a connection borrowed for a transaction, or (`dedicated`) a connection of a
   * session(): its transaction() begins and commits on it, where a borrowed one is already in one.
   */
  constructor(
    private readonly conn: Queryable,
    private readonly options: PostgresDbOptions,
    private readonly dedicated = false,
  ) {}

  async query<R extends object>(
    sql: Sql,
    params: readonly unknown[] = [],
    opts: { timeoutMs?: number } = {},
  ): Promise<R[]> {
    // Behind a transaction pooler a lone statement is a transaction of its own, so SET LOCAL can bound it.
    if (this.conn instanceof pg.Pool && this.setLocalTimeout())
      return this.transaction((tx) => tx.query<R>(sql, params, opts));
    const values = params.map((p) => (Array.isArray(p) ? (arrayLiteral(p) ?? p) : p));
    const name = this.options.preparedStatements === false ? "" : sql.name;
    const config: pg.QueryConfig & { query_timeout?: number } = { name, text: sql.text, values };
    if (opts.timeoutMs !== undefined) config.query_timeout = opts.timeoutMs;
    const res = await this.timed(this.conn.query(config), opts.timeoutMs);
    // The rows are cut loose from node-postgres's result. V8 learns to allocate the driver's result
    // objects in the old generation (allocation-site pretenuring), and a row an old object points to
    // survives every young collection until a full one: each row of each query was copied and promoted,
    // in long scavenges. Cut loose, rows
    // die young, whether or not the process runs with pretenuring off (young-garbage.ts).
    const rows = res.rows as R[];
    res.rows = [];
    return rows;
  }

  async exec(script: string): Promise<void> {
    await this.timed(this.conn.query(script));
  }

  /** The query timeout is set per transaction (behind a transaction pooler), not per connection. */
  private setLocalTimeout(): boolean {
    return this.options.pooler === "transaction" && this.options.queryTimeoutMs !== undefined;
  }

  /** Turns either kind of timeout into a DbTimeoutError that says how long it waited. */
  private async timed<R>(running: Promise<R>, timeoutMs?: number): Promise<R> {
    try {
      return await running;
    } catch (err) {
      const bound = this.options.queryTimeoutMs;
      if (bound === undefined || !(isReadTimeout(err) || isStatementTimeout(err))) throw err;
      const e = new DbTimeoutError(
        isReadTimeout(err)
          ? `Postgres did not answer within ${timeoutMs ?? bound + QUERY_TIMEOUT_SLACK_MS} ms; the connection was dropped`
          : `Postgres cancelled a statement that ran past dbQueryTimeoutMs (${bound} ms)`,
        { cause: err },
      );
      this.options.onTimeout?.(e);
      throw e;
    }
  }

  async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    if (this.dedicated) return this.inTransaction(new PgDb(this.conn, this.options), fn);
    if (!(this.conn instanceof pg.Pool)) return fn(this);
    const client = await this.conn.connect();
    // A client released with an error is destroyed, not pooled: after a read timeout its connection
    // may still answer the abandoned query, and the next borrower would read that answer as its own.
    let broken: Error | undefined;
    // A borrowed client has no 'error' listener of the pool's: a connection reset between two of the
    // transaction's statements (a pooler or Postgres restarting) would be an uncaught error and end the
    // process. The next statement fails on its own; the client is then destroyed.
    const onError = (err: Error) => {
      broken = err;
    };
    client.on("error", onError);
    try {
      return await this.inTransaction(new PgDb(client, this.options), fn, onError);
    } finally {
      client.removeListener("error", onError);
      client.release(broken);
    }
  }

  /** begin, `fn`, commit on `tx`'s connection; rollback if `fn` throws. `onBroken`: the connection is unusable. */
  private async inTransaction<T>(
    tx: PgDb,
    fn: (tx: Db) => Promise<T>,
    onBroken: (err: Error) => void = () => {},
  ): Promise<T> {
    try {
      // One round trip either way: the simple protocol takes both statements in one message.
      await tx.exec(
        this.setLocalTimeout()
          ? `begin; set local statement_timeout = ${Math.floor(this.options.queryTimeoutMs ?? 0)}`
          : "begin",
      );
      const result = await fn(tx);
      await tx.exec("commit");
      return result;
    } catch (err) {
      if (err instanceof DbTimeoutError && isReadTimeout(err.cause)) onBroken(err);
      else await tx.exec("rollback").catch(onBroken);
      throw err;
    }
  }

  async session<T>(fn: (session: Db) => Promise<T>): Promise<T> {
    if (!(this.conn instanceof pg.Pool)) return fn(this);
    const url = this.options.directUrl ?? this.options.url;
    const client = new pg.Client({
      connectionString: url,
      application_name: "taskq-migrate",
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
    });
    client.on("error", () => {});
    await client.connect();
    try {
      return await fn(new PgDb(client, { url, poolSize: 1 }, true));
    } finally {
      await client.end().catch(() => {});
    }
  }

  async listen(
    channels: readonly string[],
    onNotify: (channel: string, payload: string) => void,
    onLost?: (err: Error) => void,
  ): Promise<() => Promise<void>> {
    const bound = this.options.queryTimeoutMs;
    const client = new pg.Client({
      connectionString: this.options.directUrl ?? this.options.url,
      application_name: "taskq-listen",
      // A stalled server must fail the attempt, so the caller's retry loop goes on.
      connectionTimeoutMillis: connectTimeoutMs(bound),
      keepAlive: true,
      ...(bound === undefined
        ? {}
        : { statement_timeout: bound, query_timeout: bound + QUERY_TIMEOUT_SLACK_MS }),
    });
    const db = new PgDb(client, this.options);
    let lost = false;
    let listening = false;
    let check: NodeJS.Timeout | undefined;
    const lose = (err: Error) => {
      if (lost) return;
      lost = true;
      clearInterval(check);
      if (check) this.listenChecks.delete(check);
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
    // A LISTEN connection only receives, so a silent one (stalled server, dead VIP) would go unnoticed
    // for as long as TCP keeps it open: ask it something cheap now and then. A failed check destroys the
    // connection (end() with a query in flight) and reports it lost; the caller listens again.
    const checkMs = connectTimeoutMs(bound);
    let checking = false;
    check = setInterval(() => {
      if (checking || lost) return;
      checking = true;
      db.query({ name: "", text: "select 1" }, [], { timeoutMs: checkMs })
        .catch((err: Error) => {
          lose(err);
          void client.end().catch(() => {});
        })
        .finally(() => {
          checking = false;
        });
    }, LISTEN_CHECK_MS);
    check.unref();
    this.listenChecks.add(check);
    return async () => {
      lost = true;
      clearInterval(check);
      if (check) this.listenChecks.delete(check);
      const at = this.listeners.indexOf(client);
      if (at >= 0) this.listeners.splice(at, 1);
      await client.end().catch(() => {});
    };
  }

  async close(): Promise<void> {
    for (const t of this.listenChecks) clearInterval(t);
    this.listenChecks.clear();
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
  const bound = options.queryTimeoutMs;
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    application_name: "taskq",
    // A broken connection must not wait forever; the caller sees an error and retries. This also bounds
    // the wait for a free pooled connection, so it is no longer than a query may take.
    connectionTimeoutMillis: connectTimeoutMs(bound),
    idleTimeoutMillis: 30_000,
    // The kernel probes idle connections, so a peer gone without a RST is found without traffic.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // Postgres cancels a statement past the bound (it rolls back); a connection that has not answered
    // even that a moment later is stalled, and node-postgres fails the query. The pool then destroys it.
    // Behind a transaction pooler, statement_timeout is set inside each transaction instead (PgDb).
    ...(bound === undefined ? {} : { query_timeout: bound + QUERY_TIMEOUT_SLACK_MS }),
    ...(bound === undefined || options.pooler === "transaction" ? {} : { statement_timeout: bound }),
  });
  // An idle client erroring (server restart, terminated backend) must not crash the process.
  pool.on("error", (err) => onPoolError?.(err));
  return new PgDb(pool, options);
}

class PgliteDb implements Db {
  /** This Db's LISTEN callbacks by channel, for notifications PGlite cannot route itself (pg-wire.ts). */
  readonly listeners = new Map<string, Set<(payload: string) => void>>();

  constructor(
    readonly db: PGlite | Parameters<Parameters<PGlite["transaction"]>[0]>[0],
    /** Releases the data directory's lock, once PGlite has closed. */
    private readonly unlock: () => Promise<void> = async () => {},
  ) {}

  async query<R extends object>(sql: Sql, params: readonly unknown[] = []): Promise<R[]> {
    // In-process: nothing to time out (the options' timeoutMs does not apply).
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

  async session<T>(fn: (session: Db) => Promise<T>): Promise<T> {
    return fn(this);
  }

  async listen(
    channels: readonly string[],
    onNotify: (channel: string, payload: string) => void,
  ): Promise<() => Promise<void>> {
    const db = this.db;
    if (!(db instanceof PGlite)) throw new Error("listen inside a transaction");
    const callbacks = channels.map((c) => [c, (payload: string) => onNotify(c, payload)] as const);
    const stops = await Promise.all(callbacks.map(([c, cb]) => db.listen(c, cb)));
    for (const [c, cb] of callbacks) {
      const set = this.listeners.get(c) ?? new Set();
      set.add(cb);
      this.listeners.set(c, set);
    }
    return async () => {
      for (const [c, cb] of callbacks) this.listeners.get(c)?.delete(cb);
      for (const stop of stops) await stop();
    };
  }

  async close(): Promise<void> {
    if (!(this.db instanceof PGlite)) return;
    try {
      if (!this.db.closed) await this.db.close();
    } finally {
      await this.unlock();
    }
  }
}

/**
 * The PGlite behind a Db from pgliteDb(), and a way to hand its LISTEN callbacks a notification that
 * PGlite did not route (one raised by a psql client of the dev Postgres port); null for Postgres.
 */
export function embeddedPglite(
  db: Db,
): { pglite: PGlite; deliver: (channel: string, payload: string) => void } | null {
  if (!(db instanceof PgliteDb) || !(db.db instanceof PGlite)) return null;
  const listeners = db.listeners;
  return {
    pglite: db.db,
    deliver: (channel, payload) => {
      for (const cb of listeners.get(channel) ?? []) cb(payload);
    },
  };
}

/**
 * Embedded Postgres (PGlite); `dataDir` undefined keeps everything in memory. A folder is locked for
 * this process until `close` (data-dir-lock.ts): one held by a running process throws DataDirBusyError
 * before anything in it is touched.
 */
export async function pgliteDb(dataDir?: string): Promise<Db> {
  if (!dataDir) return new PgliteDb(await PGlite.create());
  const dir = resolve(dataDir);
  // PGlite creates its own folder but not the parents (".taskq" on a fresh clone).
  await mkdir(dirname(dir), { recursive: true });
  const lock = await lockDataDir(dir);
  try {
    return new PgliteDb(await PGlite.create(dir), lock.release);
  } catch (err) {
    await lock.release();
    throw err;
  }
}
