import type { Config } from "../config.js";
import { ConfigError } from "../config.js";
import type { Logger } from "../log.js";
import { type Db, embeddedPglite } from "../store/db.js";
import { type PgWireServer, servePgWire } from "../store/pg-wire.js";

/**
 * psql into the embedded store on devPgPort: only for a PGlite the gateway opened itself (`ownDb`), so a
 * store a test passes in is never served. A port in use closes the store and says which setting to change.
 */
export async function serveDevPsql(
  db: Db,
  ownDb: boolean,
  config: Config,
  log: Logger,
): Promise<PgWireServer | null> {
  const embedded = ownDb ? embeddedPglite(db) : null;
  if (!embedded || config.devPgPort === null) return null;
  return servePgWire({
    pglite: embedded.pglite,
    host: "127.0.0.1",
    port: config.devPgPort,
    onNotify: embedded.deliver,
    log,
  }).catch(async (err: NodeJS.ErrnoException) => {
    await db.close();
    throw err.code === "EADDRINUSE"
      ? new ConfigError(
          `devPgPort (TASKQ_DEV_PG_PORT) ${config.devPgPort} is in use: pick another port, or "off"`,
        )
      : err;
  });
}
