import type { QueueSettings } from "../store/queue-store.js";

/**
 * Gate 6, slow-start: after a resume or a breaker close, a queue with ramp_seconds grows its effective
 * claim rate (in Redis) and max_running (in taskq.jobs_claim) from near zero to full over the window.
 * Returns when the ramp started (ms since epoch) while it lasts, null otherwise.
 */
export function rampStartWithin(s: QueueSettings, nowMs: number): number | null {
  if (s.ramp_seconds === null || s.ramp_started_at === null) return null;
  const start = Date.parse(s.ramp_started_at);
  return nowMs - start < s.ramp_seconds * 1000 ? start : null;
}
