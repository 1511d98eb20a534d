import type { Config } from "../config.js";

/** Retry delay for a failed attempt: exponential from retryBaseMs, capped, with jitter in [50%, 100%]. */
export function backoffMs(config: Config, attempt: number): number {
  const full = Math.min(config.retryMaxMs, config.retryBaseMs * 2 ** Math.min(attempt - 1, 40));
  return Math.round(full * (0.5 + Math.random() * 0.5));
}
