import { resolve } from "node:path";
import type { Config } from "../config.js";
import { ConfigError } from "../errors.js";
import type { Logger } from "../log.js";
import { DataDirBusyError } from "../store/data-dir-lock.js";
import { type Db, pgliteDb, postgresDb } from "../store/db.js";

/**
 * Where the store the config names keeps its data: the absolute path of the embedded store's folder,
 * "memory", or null for Postgres.
 */
export function embeddedDataDir(config: Config): string | null {
  if (config.mode !== "dev" || config.databaseUrl) return null;
  return config.dataDir === "memory" ? "memory" : resolve(config.dataDir);
}

/** Opens the store the config names: PGlite in dev mode, a Postgres pool in gateway mode. */
export async function openDb(config: Config, log: Logger): Promise<Db> {
  const dataDir = embeddedDataDir(config);
  if (dataDir) {
    return pgliteDb(dataDir === "memory" ? undefined : dataDir).catch((err) => {
      if (!(err instanceof DataDirBusyError)) throw err;
      throw new ConfigError(
        `${err.message}: stop that gateway, or set TASKQ_DATA_DIR (dataDir in the config file) to another folder; ` +
          `if process ${err.pid} is no taskq gateway, delete the lock file`,
      );
    });
  }
  // A stall times out every query in flight: warn once per 10 s at most, with the count meanwhile.
  let timeouts = 0;
  let lastWarning = 0;
  return postgresDb(
    {
      url: config.databaseUrl ?? "",
      directUrl: config.databaseDirectUrl ?? undefined,
      pooler: config.dbPooler,
      preparedStatements: config.dbPreparedStatements,
      poolSize: config.dbPoolSize,
      queryTimeoutMs: config.dbQueryTimeoutMs,
      onTimeout: (err) => {
        timeouts++;
        if (Date.now() - lastWarning < 10_000) return;
        lastWarning = Date.now();
        log.warn({ err: err.message, timeouts }, "Postgres query timed out; callers get UNAVAILABLE");
        timeouts = 0;
      },
    },
    (err) => log.warn({ err: err.message }, "idle Postgres connection failed; it will be replaced"),
  );
}
