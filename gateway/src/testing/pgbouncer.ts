/**
 * A local PgBouncer for tests, as large fleets run it: pool_mode = transaction in front of the test
 * Postgres (every database, logged in as the URL's user), on a free port, as a child process with its
 * config in a temp folder. Debian's pgbouncer refuses to run as root, so as root it runs as `postgres`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { freePort } from "./free-port.js";
import { requireCommand, serviceUrl } from "./services.js";

/** Where Debian installs it (not on a non-root PATH). */
export const PGBOUNCER = "/usr/sbin/pgbouncer";

export interface LocalPgBouncer {
  readonly port: number;
  /** `postgresUrl` (a database on the Postgres behind it) through this PgBouncer. */
  url(postgresUrl: string): string;
  /** SIGTERM (close every client and server connection at once), then start again on the same port. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer in transaction pooling mode in front of `postgresUrl`'s server (default the test
 * Postgres). Only in front of the test Postgres, and only where PgBouncer is installed: the caller asks
 * the guard first (`haveService("postgres")`, `haveCommand(PGBOUNCER, ...)`), or this throws.
 */
export async function startPgBouncer(
  postgresUrl: string = serviceUrl("postgres"),
  opts: { poolSize?: number } = {},
): Promise<LocalPgBouncer> {
  serviceUrl("postgres");
  requireCommand(PGBOUNCER);
  const target = new URL(postgresUrl);
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "taskq-pgbouncer-"));
  await chmod(dir, 0o755);
  const ini = join(dir, "pgbouncer.ini");
  await writeFile(
    ini,
    `[databases]
* = host=${target.hostname} port=${target.port || 5432} user=${decodeURIComponent(target.username || "postgres")}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = ${opts.poolSize ?? 20}
max_client_conn = 2000
ignore_startup_parameters = extra_float_digits
server_login_retry = 1
`,
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0 ? ["-u", "postgres"] : [];
  let proc: ChildProcess | undefined;
  let log = "";
  const start = async () => {
    log = "";
    proc = spawn(PGBOUNCER, [...asRoot, ini], { stdio: ["ignore", "ignore", "pipe"] });
    proc.stderr?.on("data", (d: Buffer) => {
      log = (log + d.toString()).slice(-8192);
    });
    const until = Date.now() + 10_000;
    for (;;) {
      const c = new pg.Client({ connectionString: url(postgresUrl) });
      c.on("error", () => {});
      try {
        await c.connect();
        await c.query("select 1");
        await c.end();
        return;
      } catch (err) {
        await c.end().catch(() => {});
        if (Date.now() > until || proc?.exitCode !== null)
          throw new Error(`pgbouncer did not start: ${(err as Error).message}\n${log}`);
        await sleep(100);
      }
    }
  };
  const halt = async () => {
    const p = proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    p.kill("SIGTERM");
    await once(p, "exit");
  };
  const url = (postgresUrl: string) => {
    const u = new URL(postgresUrl);
    u.hostname = "127.0.0.1";
    u.port = String(port);
    return u.toString();
  };
  await start().catch(async (err) => {
    await halt();
    await rm(dir, { recursive: true, force: true });
    throw err;
  });
  return {
    port,
    url,
    restart: async (downMs = 0) => {
      await halt();
      await sleep(downMs);
      await start();
    },
    stop: async () => {
      await halt();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
