/** Why a gate declined a queue (the wire enum ThrottleReason, by name). */
export type ReasonName =
  | "PAUSED"
  | "BREAKER_OPEN"
  | "BREAKER_PROBING"
  | "MAX_RUNNING"
  | "THROTTLE"
  | "RATE_LIMIT"
  | "FLOW_KEY"
  | "RAMPING";

/** A declined queue and exactly how long until its gate can next admit, ms. */
export interface Verdict {
  queue: string;
  reason: ReasonName;
  retryAfterMs: number;
}
