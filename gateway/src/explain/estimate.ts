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
  max_running:
    "the queue is at its cap and none of its jobs finished in the last 5 minutes to tell when a place frees",
};

/**
 * The start of a waiting job: once every blocking reason has passed (its run_at, a cooldown, a place
 * under the cap, the next throttle slot, rate or flow-key token), plus the time to claim the jobs
 * ahead of it at the pace the queue can go. That pace is the slowest of: its throttle and claim rate,
 * its cap over its average run time, and the jobs its polling workers can hold over its average run
 * time (average over the last 5 minutes); with no job finished lately, its claims over the last 5
 * minutes. An estimate, not a promise: better jobs enqueued, slow handlers and operators change it.
 */
export function estimate(reasons: readonly Reason[], facts: QueueFactsRow, now: number): Estimate {
  const blocking = reasons.filter((r) => r.blocking);
  for (const r of blocking)
    if (r.nextAtMs === null && r.gate !== "position")
      return { atMs: null, why: OPEN_ENDED[r.gate] ?? `${r.gate}: ${r.summary}` };
  let start = now;
  for (const r of blocking) if (r.nextAtMs !== null) start = Math.max(start, r.nextAtMs);
  const ahead = Number(reasons.find((r) => r.gate === "position")?.figures.ahead ?? 0);
  if (ahead === 0) return { atMs: Math.ceil(start) };
  if (blocking.some((r) => r.gate === "breaker"))
    return { atMs: null, why: "the breaker lets one probe through at a time until it closes" };
  const paces = reasons
    .filter((r) => r.gate !== "flow_key" && r.perMs !== undefined)
    .map((r) => r.perMs as number);
  if (facts.avg_run_ms) paces.push(facts.capacity / facts.avg_run_ms);
  else if (facts.claims_5m > 0) paces.push(facts.claims_5m / Math.max(60_000, now - facts.claims_since_ms));
  const perMs = Math.min(...paces);
  if (!Number.isFinite(perMs) || perMs <= 0)
    return { atMs: null, why: "nothing was claimed from this queue in the last 5 minutes to tell its pace" };
  return { atMs: Math.ceil(start + ahead / perMs) };
}
