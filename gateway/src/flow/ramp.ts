import type { QueueSettings } from "../store/queue-store.js";

/** The ramp never starts from zero: the first claim is always possible. */
const FLOOR = 0.01;

/**
 * Gate 7, slow-start: after a resume or a breaker close, a queue with ramp_seconds scales its effective
 * max_running and claim rate from near zero to full over the window. Returns the scale, FLOOR..1.
 */
export function rampProgress(s: QueueSettings, nowMs: number): number {
  if (s.ramp_seconds === null || s.ramp_started_at === null) return 1;
  const elapsed = nowMs - Date.parse(s.ramp_started_at);
  if (elapsed >= s.ramp_seconds * 1000) return 1;
  return Math.max(FLOOR, elapsed / (s.ramp_seconds * 1000));
}
