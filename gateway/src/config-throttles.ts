import { createHash } from "node:crypto";
import type { Config } from "./config.js";
import type { Logger } from "./log.js";
import type { QueueStore } from "./store/queue-store.js";

/** The digest of a config's queues section: two files with different throttles never share one. */
export function configDigest(queues: Config["queues"]): string {
  const entries = Object.keys(queues)
    .sort()
    .map((name) => [name, queues[name]?.throttle ?? null]);
  return createHash("sha256").update(JSON.stringify(entries)).digest("hex").slice(0, 16);
}

/**
 * Applies the config file's queue throttles (source "config") and removes config throttles it no
 * longer defines, if this config owns them: its version is newer than the one that last applied, or
 * the same with the same digest. An instance whose file is older or disagrees changes nothing, logs
 * it loudly and returns the disagreement (for /readyz and the taskq_config_disagreement metric), so
 * an instance started with a stale file never rewrites the fleet. Returns null when it agrees.
 * Every queue the file defines is recorded as known either way (a name, no settings), so the
 * lists of queues show it before anything is enqueued into it.
 */
export async function applyConfigThrottles(
  config: Config,
  queues: QueueStore,
  log: Logger,
): Promise<string | null> {
  await queues.queuesNote(Object.keys(config.queues));
  // Without a file (a config built in code) queues still count, as version 0.
  const version = config.configVersion ?? (Object.keys(config.queues).length > 0 ? 0 : null);
  if (version === null) return null;
  const digest = configDigest(config.queues);
  const throttles: Record<string, { limit: number; period_ms: number }> = {};
  for (const [name, def] of Object.entries(config.queues)) if (def.throttle) throttles[name] = def.throttle;
  const owner = await queues.configThrottlesApply(version, digest, throttles, "config");
  if (owner.applied) {
    log.info({ configVersion: version, digest }, "config throttles in force");
    return null;
  }
  const problem =
    `this instance's queues config (version ${version}, digest ${digest}) is not the ` +
    `fleet's (version ${owner.version}, digest ${owner.digest}); its throttles were not applied`;
  log.error({ configVersion: version, digest, owner }, `config disagrees: ${problem}`);
  return problem;
}
