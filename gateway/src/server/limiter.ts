import type { Config } from "../config.js";
import { failClosed, REDIS_COMMAND_TIMEOUT_MS } from "../limiter/fail-closed.js";
import type { Limiter } from "../limiter/limiter.js";
import { MemoryLimiter } from "../limiter/memory-limiter.js";
import { RedisLimiter } from "../limiter/redis-limiter.js";
import { redisClient } from "../limiter/redis-url.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";

/**
 * The limiter the config names: Redis's, shared by every gateway of the fleet, or without Redis an
 * in-process one (one dev gateway) on `clock`.
 */
export function configuredLimiter(config: Config, clock?: () => number): Limiter {
  return config.redisUrl ? redisLimiter(config.redisUrl, config.redisPrefix) : new MemoryLimiter(clock);
}

/** A Redis limiter on a connection of its own (`taskq-limiter` in Redis's CLIENT LIST); a cluster URL gets one per node. */
export function redisLimiter(url: string, prefix: string): RedisLimiter {
  const client = redisClient(url, {
    maxRetriesPerRequest: 1,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectionName: "taskq-limiter",
  });
  // Failed calls reach the gates as errors (fail closed); the connection's own events add nothing.
  client.on("error", () => {});
  return new RedisLimiter(client, { prefix });
}

/**
 * `limiter` failing closed (see fail-closed.ts), each error counted; a warning once per 10 s at most,
 * since an outage fails every gated poll.
 */
export function failingClosed(limiter: Limiter, metrics: Metrics, log: Logger): Limiter {
  let lastWarning = 0;
  return failClosed(limiter, (err) => {
    metrics.limiterErrors.inc();
    if (Date.now() - lastWarning < 10_000) return;
    lastWarning = Date.now();
    log.warn({ err: (err as Error).message }, "limiter unreachable: its gates decline (fail closed)");
  });
}
