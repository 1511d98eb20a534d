import type { Limiter } from "../limiter/limiter.js";
import type { Maintainer } from "../maintenance/maintainer.js";
import type { Db } from "../store/db.js";
import type { PgWireServer } from "../store/pg-wire.js";
import type { ClaimPath } from "./claim-path.js";
import type { Listeners } from "./listeners.js";
import type { Readiness } from "./readiness.js";
import type { ServingState } from "./serving-state.js";

/** The parts of a running gateway that hold connections, timers or watches. */
export interface RunningParts {
  /** The health service's state: NOT_SERVING from the first step on. */
  serving: ServingState;
  /** Stops of file watches (certificates, tokens). */
  watches: (() => void)[];
  listeners: Listeners;
  pgWire: PgWireServer | null;
  maintainer: Maintainer;
  claimPath: ClaimPath;
  db: Db;
  limiter: Limiter;
  readiness: Readiness;
}

/**
 * Stops a gateway in dependency order: health checks say NOT_SERVING, then no new callers, then the work that uses the stores
 * (maintenance, the claim path's flushes and LISTEN), then the stores themselves.
 */
export async function shutdown(p: RunningParts): Promise<void> {
  // Health watchers (load balancers) hear NOT_SERVING before the ports close.
  p.serving.drain();
  for (const stop of p.watches) stop();
  await p.listeners.close();
  await p.pgWire?.stop();
  await p.maintainer.stop();
  await p.claimPath.stop();
  await p.db.close();
  await p.limiter.close().catch(() => {});
  await p.readiness.close();
}
