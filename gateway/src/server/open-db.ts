import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import { type Db, pgliteDb, postgresDb } from "../store/db.js";

/** Opens the store the config names: PGlite in dev mode, a Postgres pool in gateway mode. */
export async function openDb(config: Config, log: Logger): Promise<Db> {
  if (config.mode === "dev" && !config.databaseUrl) {
    return pgliteDb(config.dataDir === "memory" ? undefined : config.dataDir);
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
