import type { ReasonName, Verdict } from "../flow/verdict.js";
import type { QueueSettings } from "../store/queue-store.js";
import type { LockedVerdict } from "../store/store.js";

/**
 * May this worker take a job of this queue now? The gates answer in this order; the first that
 * declines is the queue's verdict, and whatever the earlier gates took is given back.
 *
 * | # | gate (verdict) | decided | gives back |
 * |---|---|---|---|
 * | 1 | pause (PAUSED) | Postgres, under the queue's row lock | nothing is taken |
 * | 2 | breaker (BREAKER_OPEN, BREAKER_PROBING) | Postgres, under the row lock; the probe under it exclusively | a probe that is not delivered frees its slot (no longer running) |
 * | 3 | max_running, ramped (MAX_RUNNING, RAMPING) | Postgres, running jobs counted under the exclusive row lock | a job that settles, or is put back, frees its place |
 * | 4 | throttle (THROTTLE) | Redis: one slot per interval, fleet-wide; this gateway takes turns per queue | a slot whose claim found no job is refunded |
 * | 5 | claim rate (RATE_LIMIT) | Redis: a token bucket (GCRA) | tokens beyond the jobs claimed are refunded |
 * | 6 | ramp of the claim rate (RAMPING) | Redis: the rate scaled over the ramp window | as the claim rate |
 * | 7 | flow keys (FLOW_KEY) | Redis: a token bucket per key, after the pick | jobs beyond a key's tokens are unclaimed, attempt restored |
 *
 * Gates 1-3 are one statement, taskq.jobs_claim, for every queue, whatever a gateway's cached settings
 * say: no claim starts after a pause, a trip or a lower cap commits. Gates 4-6 read their settings
 * from this gateway's cache (dropped on every change notification); they are taken before that
 * statement runs and given back for what it did not claim, except a claim rate whose last take here
 * got all it asked for with tokens to spare: its take runs beside the statement, and jobs claimed
 * beyond the tokens go back untouched (GatedClaim). Gate 7 meters the jobs it claimed, with flow
 * limits from the cache.
 */
/**
 * The gates of the table above, in its order, with the verdicts each answers. Explain
 * (explain/explain.ts) walks this list, with one reader per gate keyed by its name: a gate added here
 * does not compile until explain can read it too.
 */
export const GATES = [
  { gate: "paused", verdicts: ["PAUSED"] },
  { gate: "breaker", verdicts: ["BREAKER_OPEN", "BREAKER_PROBING"] },
  { gate: "max_running", verdicts: ["MAX_RUNNING", "RAMPING"] },
  { gate: "throttle", verdicts: ["THROTTLE"] },
  { gate: "claim_rate", verdicts: ["RATE_LIMIT"] },
  { gate: "ramp", verdicts: ["RAMPING"] },
  { gate: "flow_key", verdicts: ["FLOW_KEY"] },
] as const satisfies readonly { gate: string; verdicts: readonly ReasonName[] }[];

/** A gate's name in {@link GATES}. */
export type GateName = (typeof GATES)[number]["gate"];

export interface GateTimings {
  /** retry_after of a PAUSED verdict: how often a worker looks again, ms. */
  pausedRetryMs: number;
  /** retry_after of a MAX_RUNNING or RAMPING (cap) verdict: a slot frees when any job settles, ms. */
  maxRunningRetryMs: number;
}

/**
 * True when the queue is claimed poll by poll (GatedClaim) rather than merged with other polls
 * (MergedClaims): a Redis gate applies (throttle, claim rate and its ramp), its row is locked
 * exclusively (a cap, or a breaker that is not closed), or it has a breaker at all. Those claims are
 * serialized on the row anyway, and polls waiting in line for the lock each get a place the moment it
 * frees; one merged claim answered them all at once and sent most away to look again later, which left
 * the cap unused for longer. Every such queue is handed only a poll's free slots (Poll.freeSlots): a
 * job buffered behind a cap holds its place, and one buffered when a breaker trips would start after
 * the trip.
 */
export function claimsAlone(s: QueueSettings | null): s is QueueSettings {
  return (
    s !== null &&
    (s.throttle !== null || s.claim_rate_per_minute !== null || s.max_running !== null || s.breaker !== null)
  );
}

/** A verdict of gates 1-3 as answered to the worker: this gateway's retry where Postgres left it open. */
export function lockedVerdict(v: LockedVerdict, timings: GateTimings): Verdict {
  const retryAfterMs =
    v.retryAfterMs ?? (v.reason === "PAUSED" ? timings.pausedRetryMs : timings.maxRunningRetryMs);
  return { queue: v.queue, reason: v.reason, retryAfterMs };
}
