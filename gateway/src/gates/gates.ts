import type { QueueSettings } from "../store/queue-store.js";
import type { ClaimedJob } from "../store/types.js";
import type { ReasonName, Verdict } from "./verdict.js";

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
 * statement runs, each admitting at most what the one before it did, and given back for what it did
 * not claim, except a claim rate whose last take here got all it asked for with tokens to spare: its
 * take runs beside the statement, and jobs claimed beyond the tokens go back untouched (claim-rate.ts).
 * Gate 7 meters the jobs it claimed, with flow limits from the cache.
 *
 * One file of this folder per gate: locked.ts (1-3, the TypeScript side of taskq.jobs_claim),
 * throttle.ts, claim-rate.ts, ramp.ts and flow-key.ts. claim/gated-claim.ts runs them in this order.
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

/** Claimed jobs (gate 7 let through), or the verdict of the first gate that declined. */
export interface GatedResult {
  jobs: ClaimedJob[];
  verdict: Verdict | null;
  /** Jobs a flow key sent back: others may be ready behind them. */
  sentBack: number;
}

/** What a gate taken before the claim statement (4-6) holds for one claim. */
export interface Taken {
  /** Jobs it admits, at most the `want` it was asked for. */
  admitted: number;
  /** How long the claim waits before it runs (a throttle slot taken a moment early), ms. */
  waitMs: number;
  /** Gives back what the claim did not use, once it has run. */
  giveBack(used: number): Promise<void>;
}

/** A gate taken before the claim statement, in Redis. */
export interface GateBeforeClaim {
  /** Its verdict's reason, answered when its limiter is unreachable. */
  readonly reason: ReasonName;
  /** What it admits of `want` jobs, its verdict when it admits none, or null when it does not apply. */
  take(queue: string, s: QueueSettings, want: number): Promise<Taken | Verdict | null>;
}

/** Taken for `admitted` jobs; after the claim, `refund` gets back those it did not use. */
export function refunding(admitted: number, refund: (n: number) => Promise<void>): Taken {
  return {
    admitted,
    waitMs: 0,
    giveBack: (used) => (admitted > used ? refund(admitted - used) : Promise.resolve()),
  };
}
