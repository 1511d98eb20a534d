import net from "node:net";
import type { PGlite } from "@electric-sql/pglite";
import type { Logger } from "../log.js";

/**
 * The Postgres wire protocol on a TCP port, in front of `taskq dev`'s embedded PGlite, so psql (or any
 * Postgres client) can run the operator verbs and reads — `SELECT taskq.pause_queue('mail', 'ada')`,
 * `SELECT * FROM taskq.queue_health(NULL)` — against the dev store.
 *
 * Why not @electric-sql/pglite-socket: its 0.2.17 declares exact peer dependencies on PGlite 0.5.14
 * and seven PGlite extension packages, so `npm ci` refuses it next to our PGlite 0.5.17; and it
 * interleaves a client's messages with other users of the same PGlite, where the gateway itself is
 * one. Here each client request (messages up to a Sync, or one simple Query) runs under both of
 * PGlite's locks, so it never lands inside one of the gateway's transactions, nor the gateway's inside
 * a client's; a client inside an explicit transaction (BEGIN) holds the store until it ends.
 *
 * PGlite is one Postgres session: notifications its statements raise come back in the client's
 * output; they are handed to `onNotify` (the gateway's own LISTEN) instead. Session settings a client
 * changes (SET) stay changed for the gateway too.
 */
export interface PgWireServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
/** Messages after which a client waits for an answer: run what came so far. */
const ANSWER_NOW = new Set(["Q", "S", "H", "c", "f"]);

/** Starts the server on host:port (0 picks a free port). */
export async function servePgWire(opts: {
  pglite: PGlite;
  host: string;
  port: number;
  onNotify: (channel: string, payload: string) => void;
  log: Logger;
}): Promise<PgWireServer> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    new Connection(opts.pglite, socket, opts.onNotify, opts.log);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `postgres://postgres@${opts.host}:${port}/postgres`,
    port,
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

type Pglite = PGlite & {
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
};

class Connection {
  #buffer = Buffer.alloc(0);
  #started = false;
  #pending: Buffer[] = [];
  /** Runs one request after the other. */
  #chain: Promise<void> = Promise.resolve();
  /** Set while this client is inside a transaction: the locks are held until it ends. */
  #release: (() => void) | null = null;
  #closed = false;
  readonly #db: Pglite;

  constructor(
    db: PGlite,
    private readonly socket: net.Socket,
    private readonly onNotify: (channel: string, payload: string) => void,
    private readonly log: Logger,
  ) {
    this.#db = db as Pglite;
    socket.setNoDelay(true);
    // No encoding is set on the socket, so every chunk is a Buffer.
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      this.#closed = true;
      this.#enqueue(() => this.#endSession());
    });
  }

  #onData(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      if (!this.#started) {
        // Untyped first messages: length, then a code (SSL/GSS request, cancel, or startup).
        if (this.#buffer.length < 8) return;
        const len = this.#buffer.readInt32BE(0);
        if (this.#buffer.length < len) return;
        const code = this.#buffer.readInt32BE(4);
        const msg = this.#buffer.subarray(0, len);
        this.#buffer = this.#buffer.subarray(len);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          this.socket.write("N"); // no encryption: the client goes on in plain text
        } else if (code === CANCEL_REQUEST) {
          this.socket.end(); // not supported: a statement runs to its end
          return;
        } else {
          this.#started = true;
          this.#run([Buffer.from(msg)]);
        }
        continue;
      }
      if (this.#buffer.length < 5) return;
      const len = this.#buffer.readInt32BE(1) + 1;
      if (this.#buffer.length < len) return;
      const type = String.fromCharCode(this.#buffer[0] ?? 0);
      const msg = Buffer.from(this.#buffer.subarray(0, len));
      this.#buffer = this.#buffer.subarray(len);
      if (type === "X") {
        this.socket.end(); // Terminate: ends this client, never PGlite's one session
        return;
      }
      this.#pending.push(msg);
      if (ANSWER_NOW.has(type)) {
        const batch = this.#pending;
        this.#pending = [];
        this.#run(batch);
      }
    }
  }

  #enqueue(fn: () => Promise<void>): void {
    this.#chain = this.#chain.then(fn).catch((err: unknown) => {
      this.log.warn({ err: (err as Error).message }, "dev Postgres port: client request failed");
      this.socket.destroy();
    });
  }

  #run(messages: Buffer[]): void {
    this.#enqueue(async () => {
      if (this.#closed) return;
      if (this.#release) {
        await this.#exec(messages);
        this.#releaseIfDone();
        return;
      }
      // Both locks: PGlite's own query() and transaction() take the first, so nothing of the gateway's
      // runs between this request's messages, and this request never runs inside a gateway transaction.
      await new Promise<void>((done, fail) => {
        this.#db
          ._runExclusiveTransaction(() =>
            this.#db._runExclusiveQuery(async () => {
              try {
                await this.#exec(messages);
              } catch (err) {
                fail(err);
                return;
              }
              if (!this.#db.isInTransaction()) return done();
              // BEGIN without its end: keep the store to this client until the transaction ends.
              await new Promise<void>((release) => {
                this.#release = release;
                done();
              });
            }),
          )
          .catch(fail);
      });
    });
  }

  async #exec(messages: Buffer[]): Promise<void> {
    for (const msg of messages) {
      const out: Uint8Array[] = [];
      await this.#db.execProtocolRawStream(new Uint8Array(msg), { onRawData: (d) => out.push(d.slice()) });
      const bytes = this.#withoutNotifications(Buffer.concat(out));
      if (bytes.length > 0 && !this.socket.destroyed) this.socket.write(bytes);
    }
  }

  /** Hands NotificationResponse messages to the gateway's LISTEN and keeps the rest for the client. */
  #withoutNotifications(data: Buffer): Buffer {
    const keep: Buffer[] = [];
    let at = 0;
    while (at + 5 <= data.length) {
      const len = data.readInt32BE(at + 1) + 1;
      const msg = data.subarray(at, at + len);
      if (msg[0] === 0x41 /* A */) {
        const body = msg.subarray(9); // type, length, sender pid
        const end = body.indexOf(0);
        const channel = body.subarray(0, end).toString("utf8");
        const payload = body.subarray(end + 1, body.indexOf(0, end + 1)).toString("utf8");
        this.onNotify(channel, payload);
      } else keep.push(msg);
      at += len;
    }
    if (at < data.length) keep.push(data.subarray(at));
    return Buffer.concat(keep);
  }

  #releaseIfDone(): void {
    if (this.#release && !this.#db.isInTransaction()) {
      this.#release();
      this.#release = null;
    }
  }

  /** The client went away: roll back a transaction it left open, and free the store. */
  async #endSession(): Promise<void> {
    if (!this.#release) return;
    // Raw, as the locks are ours already (PGlite's exec() would wait for them).
    const sql = Buffer.from("ROLLBACK\0", "utf8");
    const query = Buffer.alloc(5 + sql.length);
    query.write("Q", 0);
    query.writeInt32BE(4 + sql.length, 1);
    sql.copy(query, 5);
    await this.#db.execProtocolRawStream(new Uint8Array(query), { onRawData: () => {} }).catch(() => {});
    this.#release();
    this.#release = null;
  }
}
