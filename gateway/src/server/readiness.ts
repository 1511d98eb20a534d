import type { Config } from "../config.js";
import { REDIS_COMMAND_TIMEOUT_MS } from "../limiter/fail-closed.js";
import { redisClient } from "../limiter/redis-url.js";
import type { Logger } from "../log.js";
import type { Db } from "../store/db.js";

/** Longest /readyz waits for Postgres's answer, ms (less when dbQueryTimeoutMs is less). */
const READY_DB_TIMEOUT_MS = 2000;

/** What /readyz asks: can this gateway reach Postgres and (when configured) Redis right now? */
export interface Readiness {
  /** null when ready, else what is unreachable. */
  problem(): Promise<string | null>;
  close(): Promise<void>;
}

/** Starts the readiness probe, with a Redis connection of its own when the config names Redis. */
export function readiness(db: Db, config: Config, log: Logger): Readiness {
  const redis = config.redisUrl
    ? redisClient(config.redisUrl, {
        lazyConnect: true,
        maxRetriesPerRequest: 1,
        commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
        connectionName: "taskq",
      })
    : null;
  redis?.on("error", (err) => log.warn({ err: err.message }, "redis connection error"));
  // Not awaited: a gateway starts (not ready) while Redis is down, and ioredis keeps reconnecting.
  redis?.connect().catch(() => {});

  const readyDbMs = Math.min(READY_DB_TIMEOUT_MS, config.dbQueryTimeoutMs);
  const problem = async (): Promise<string | null> => {
    // Bounded twice: the probe's connection is dropped if it stays silent, and the wait for a pooled
    // connection (all of them stuck in a stall) is cut short too, so readyz answers, 503, at once.
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      db.query({ name: "taskq_ready", text: "select 1" }, [], { timeoutMs: readyDbMs }).then(
        () => true,
        () => false,
      ),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), readyDbMs);
      }),
    ]);
    clearTimeout(timer);
    if (!answered) return "database unreachable";
    if (redis && redis.status !== "ready") return "redis unreachable";
    // A connection can stay open while Redis no longer answers: ask it.
    if (
      redis &&
      !(await redis.ping().then(
        () => true,
        () => false,
      ))
    )
      return "redis unreachable";
    return null;
  };
  return {
    problem,
    close: async () => {
      await redis?.quit().catch(() => {});
    },
  };
}
