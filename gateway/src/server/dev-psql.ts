import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import { type Db, embeddedPglite } from "../store/db.js";
import { type PgWireServer, servePgWire } from "../store/pg-wire.js";
import { DEV_PG_PORT, listenError } from "./listen-error.js";

/**
 * psql into the embedded store on devPgPort: only for a PGlite the gateway opened itself (`ownDb`), so a
 * store a test passes in is never served. A port in use throws a ConfigError saying which setting moves it.
 */
export async function serveDevPsql(
  db: Db,
  ownDb: boolean,
  config: Config,
  log: Logger,
): Promise<PgWireServer | null> {
  const embedded = ownDb ? embeddedPglite(db) : null;
  const port = config.devPgPort;
  if (!embedded || port === null) return null;
  const host = "127.0.0.1";
  return servePgWire({ pglite: embedded.pglite, host, port, onNotify: embedded.deliver, log }).catch(
    (err) => {
      throw listenError(err, DEV_PG_PORT, host, port);
    },
  );
}
