import { type Config, loadConfig } from "../config.js";
import type { Limiter } from "../limiter/limiter.js";
import { type Logger, silentLogger } from "../log.js";
import { type Gateway, startGateway } from "../server.js";
import { pgliteDb } from "../store/db.js";
import { freshPostgres, serviceUrl } from "./services.js";

export interface TestGateway extends Gateway {
  /** The Postgres URL this gateway uses (postgres engine only), to start more instances on it. */
  readonly databaseUrl: string | null;
}

export interface TestGatewayOptions {
  /**
   * "pglite" (default): in-memory embedded store; "postgres": a fresh database on the test Postgres and
   * the test Redis for its limiter (unless `config.redisUrl` names another, or null for none), which the
   * test file must have asked the guard for: `haveService("postgres")` and `haveService("redis")`.
   */
  engine?: "pglite" | "postgres";
  /** Join an existing Postgres database (another instance's `databaseUrl`) instead of a fresh one. */
  databaseUrl?: string;
  /** Config overrides. */
  config?: Partial<Config>;
  /** PGlite data directory (pglite engine), to restart a gateway on the same data; default in memory. */
  dataDir?: string;
  /** The gateway's logger; default silent. */
  log?: Logger;
  /** Builds the gateway's limiter from its config (to wrap the one it names, say); default the one it names. */
  limiter?: (config: Config) => Limiter;
  /** The clock the gates read (see GatewaySeams.clock). */
  clock?: () => number;
}

/**
 * A real gateway on free ports for tests. With the postgres engine and no databaseUrl it creates a
 * fresh database and drops it on stop. The services it reaches go through the guard (services.ts).
 */
export async function startTestGateway(opts: TestGatewayOptions = {}): Promise<TestGateway> {
  const engine = opts.databaseUrl ? "postgres" : (opts.engine ?? "pglite");
  // Both asked of the guard before anything starts, so a test missing either fails on the spot.
  const ownRedis = opts.config !== undefined && "redisUrl" in opts.config;
  const redisUrl = engine !== "postgres" ? undefined : ownRedis ? opts.config?.redisUrl : serviceUrl("redis");
  if (engine === "postgres") serviceUrl("postgres");
  const fresh = engine === "postgres" && !opts.databaseUrl ? await freshPostgres() : null;
  const databaseUrl = opts.databaseUrl ?? fresh?.url ?? null;
  // Production mode needs tokens: a Postgres gateway without them runs as an open dev gateway on Postgres.
  const mode = engine === "postgres" && opts.config?.tokens?.length ? "gateway" : "dev";
  const base = loadConfig(mode, {
    TASKQ_DATABASE_URL: databaseUrl ?? undefined,
    TASKQ_REDIS_URL: redisUrl ?? undefined,
  });
  const config: Config = {
    ...base,
    grpcPort: 0,
    httpPort: 0,
    host: "127.0.0.1",
    dbPoolSize: 4,
    ...opts.config,
  };
  const db = engine === "pglite" ? await pgliteDb(opts.dataDir) : undefined;
  const gateway = await startGateway(config, opts.log ?? silentLogger(), {
    db,
    limiter: opts.limiter?.(config),
    clock: opts.clock,
  });
  return {
    ...gateway,
    databaseUrl,
    stop: async () => {
      await gateway.stop();
      await fresh?.drop();
    },
  };
}
