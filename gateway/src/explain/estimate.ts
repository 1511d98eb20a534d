import type { QueueFactsRow } from "../store/explain-store.js";
import type { Reason } from "./reason.js";

/** When a waiting job should start, or why there is no telling. */
export interface Estimate {
  atMs: number | null;
  /** Why there is no estimate (atMs null). */
  why?: string;
}

/** Why a blocking reason without a known end leaves no estimate. */
const OPEN_ENDED: Partial<Record<Reason["gate"], string>> = {
  workers: "nothing is claiming this queue",
  paused: "the queue is paused until someone resumes it",
  breaker: "the breaker's probe is out; nothing else is claimed until it settles",
};

/**
 * The start of a waiting job: once every blocking reason with a known end has passed (its run_at, a
 * cooldown, the next throttle slot, rate or flow-key token), plus the time to claim the jobs ahead of it
 * (and, at a full cap, one more to free a place) at the rate the queue can go: its claims over the
 * last 5 minutes, no faster than its throttle or claim rate allow, or those alone when it has claimed
 * nothing lately. An estimate, not a promise: enqueues of better jobs, settles and operators change it.
 */
export function estimate(reasons: readonly Reason[], facts: QueueFactsRow, now: number): Estimate {
  const blocking = reasons.filter((r) => r.blocking);
  for (const r of blocking)
    if (r.nextAtMs === null && r.gate !== "position" && r.gate !== "max_running")
      return { atMs: null, why: OPEN_ENDED[r.gate] ?? `${r.gate}: ${r.summary}` };
  let start = now;
  for (const r of blocking) if (r.nextAtMs !== null) start = Math.max(start, r.nextAtMs);
  const ahead = Number(reasons.find((r) => r.gate === "position")?.figures.ahead ?? 0);
  const capFull = blocking.some((r) => r.gate === "max_running");
  const need = ahead + (capFull ? 1 : 0);
  if (need === 0) return { atMs: Math.ceil(start) };
  if (blocking.some((r) => r.gate === "breaker"))
    return { atMs: null, why: "the breaker lets one probe through at a time until it closes" };
  const observed = facts.claims_5m / Math.max(60_000, now - facts.claims_since_ms);
  const bound = Math.min(
    ...reasons.filter((r) => r.gate !== "flow_key" && r.perMs !== undefined).map((r) => r.perMs as number),
  );
  const perMs = observed > 0 ? Math.min(observed, bound) : bound;
  if (!Number.isFinite(perMs) || perMs <= 0)
    return { atMs: null, why: "nothing was claimed from this queue in the last 5 minutes" };
  return { atMs: Math.ceil(start + need / perMs) };
}
