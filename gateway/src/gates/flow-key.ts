import type { Profiles } from "../flow/profiles.js";
import { LIMITER_DOWN_RETRY_MS, LimiterUnavailableError } from "../limiter/fail-closed.js";
import { flowRateKey, type Limiter } from "../limiter/limiter.js";
import type { Store } from "../store/store.js";
import { type ClaimedJob, leaseKeys } from "../store/types.js";
import type { Verdict } from "./verdict.js";

/** Claimed jobs a flow key let through, and how many it sent back (unclaimed). */
export interface Admitted {
  jobs: ClaimedJob[];
  sentBack: number;
}

/**
 * Gate 7, flow keys: claims of jobs carrying a limited flow key are metered (GCRA) across all queues.
 * A key found over its limit is skipped by this gateway's claims until its next token (no head-of-line
 * blocking: other keys' jobs behind it are claimed at full speed); jobs claimed beyond a key's tokens
 * are put back untouched, attempt restored.
 */
export class FlowKeyGate {
  /** Limited keys out of tokens → when the next one comes (ms since epoch, this gateway's clock). */
  private readonly blocked = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly profiles: Profiles,
    private readonly limiter: Limiter,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Keys claims should skip now. */
  blockedKeys(): string[] {
    const now = this.clock();
    for (const [key, until] of this.blocked) if (until <= now) this.blocked.delete(key);
    return [...this.blocked.keys()];
  }

  /**
   * Takes a token per claimed job with a limited key; jobs without one are put back (and their key is
   * skipped from now on, so claiming again at once reaches the other keys' jobs).
   */
  async admit(jobs: ClaimedJob[]): Promise<Admitted> {
    const limits = await this.profiles.flowLimitsAll();
    if (limits.size === 0 || jobs.every((j) => j.flowKey === null || !limits.has(j.flowKey)))
      return { jobs, sentBack: 0 };
    const byKey = new Map<string, ClaimedJob[]>();
    for (const j of jobs) {
      if (j.flowKey !== null && limits.has(j.flowKey))
        byKey.set(j.flowKey, [...(byKey.get(j.flowKey) ?? []), j]);
    }
    const dropped = new Set<ClaimedJob>();
    await Promise.all(
      [...byKey].map(async ([key, claimed]) => {
        const limit = limits.get(key);
        if (!limit) return;
        const r = await this.limiter
          .rateTake(flowRateKey(key), limit.ratePerMinute, limit.burst, claimed.length)
          .catch((err: unknown) => {
            // Fail closed: an unreachable limiter admits none of this key's jobs for a while.
            if (err instanceof LimiterUnavailableError)
              return { admitted: 0, retryAfterMs: LIMITER_DOWN_RETRY_MS };
            throw err;
          });
        for (const j of claimed.slice(r.admitted)) dropped.add(j);
        if (r.admitted < claimed.length) this.blocked.set(key, this.clock() + r.retryAfterMs);
      }),
    );
    if (dropped.size === 0) return { jobs, sentBack: 0 };
    await this.store.jobsUnclaim(leaseKeys(dropped));
    return { jobs: jobs.filter((j) => !dropped.has(j)), sentBack: dropped.size };
  }

  /** FLOW_KEY verdicts for queues whose every ready job carries a blocked key. */
  async verdicts(queues: readonly string[]): Promise<Verdict[]> {
    const keys = this.blockedKeys();
    if (keys.length === 0 || queues.length === 0) return [];
    const rows = await this.store.jobsReadyFlowKeys(queues, keys);
    const now = this.clock();
    const soonest = new Map<string, number>();
    for (const r of rows) {
      const until = this.blocked.get(r.flowKey) ?? now;
      soonest.set(r.queue, Math.min(soonest.get(r.queue) ?? Number.POSITIVE_INFINITY, until));
    }
    return [...soonest].map(([queue, until]) => ({
      queue,
      reason: "FLOW_KEY" as const,
      retryAfterMs: Math.max(1, until - now),
    }));
  }
}
