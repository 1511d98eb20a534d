import { LIMITER_DOWN_RETRY_MS, LimiterUnavailableError } from "../limiter/fail-closed.js";
import { type Limiter, queueRateKey, type RateTakeResult } from "../limiter/limiter.js";
import type { QueueSettings } from "../store/queue-store.js";
import type { Store } from "../store/store.js";
import { type ClaimedJob, leaseKeys } from "../store/types.js";
import type { Admitted } from "./flow-key.js";
import { type GateBeforeClaim, type GatedResult, refunding, type Taken } from "./gates.js";
import type { Verdict } from "./verdict.js";

/**
 * Gate 5, the claim rate: a token bucket (GCRA) per queue in Redis, fleet-wide, `claim_burst` deep.
 * A claim takes a token per job it may claim; tokens beyond the jobs it claimed are refunded. While the
 * rate does not bind, the take runs beside the claim statement instead (claimBeside).
 */
export class ClaimRateGate implements GateBeforeClaim {
  readonly reason = "RATE_LIMIT";
  /** Queues whose last take here admitted all it asked for with tokens to spare. */
  readonly #roomy = new Set<string>();

  constructor(
    private readonly limiter: Limiter,
    private readonly store: Store,
  ) {}

  /** Whether the queue's next claim takes its tokens beside the claim statement (claimBeside). */
  roomy(queue: string): boolean {
    return this.#roomy.has(queue);
  }

  async take(queue: string, s: QueueSettings, want: number): Promise<Taken | Verdict | null> {
    const rate = s.claim_rate_per_minute;
    if (rate === null) return null;
    const key = queueRateKey(queue);
    const r = await this.limiter.rateTake(key, rate, s.claim_burst ?? 1, want);
    this.#note(queue, want, r);
    if (r.admitted === 0) return { queue, reason: "RATE_LIMIT", retryAfterMs: r.retryAfterMs };
    return refunding(r.admitted, (n) => this.limiter.rateRefund(key, rate, n));
  }

  /**
   * The take and the claim statement (`pick`) at once, for a roomy queue: a rate that does not bind
   * then adds no Redis round trip to the poll. Only the jobs the take admitted are kept, the best
   * first, and go on to `admit` (gate 7); the others go back untouched, attempt restored, as a flow
   * key's do, and the queue takes its tokens first again until a take leaves tokens over. Unused tokens
   * are refunded. The jobs' started_at is the claim's time, which precedes their admission by the
   * take's round trip.
   */
  async claimBeside(
    queue: string,
    s: QueueSettings & { claim_rate_per_minute: number },
    want: number,
    pick: () => Promise<ClaimedJob[] | Verdict>,
    admit: (jobs: ClaimedJob[]) => Promise<Admitted>,
  ): Promise<GatedResult> {
    const rate = s.claim_rate_per_minute;
    const key = queueRateKey(queue);
    // Settled either way, so neither promise is left rejected and unobserved.
    const [took, picked] = await Promise.allSettled([
      this.limiter.rateTake(key, rate, s.claim_burst ?? 1, want),
      pick(),
    ]);
    const admitted = took.status === "fulfilled" ? took.value.admitted : 0;
    if (picked.status === "rejected") {
      if (admitted > 0) await this.limiter.rateRefund(key, rate, admitted);
      throw picked.reason;
    }
    const verdict = Array.isArray(picked.value) ? null : picked.value;
    const jobs = Array.isArray(picked.value) ? picked.value : [];
    this.#note(queue, want, took.status === "fulfilled" ? took.value : undefined);
    // Best first: the jobs a binding rate keeps are the ones a claim that took first would have got.
    const ranked = admitted < jobs.length ? [...jobs].sort((x, y) => y.priority - x.priority) : jobs;
    const extra = ranked.slice(admitted);
    if (extra.length > 0) await this.store.jobsUnclaim(leaseKeys(extra));
    if (took.status === "rejected" && !(took.reason instanceof LimiterUnavailableError)) throw took.reason;
    const res = verdict ? { jobs: [], sentBack: 0 } : await admit(ranked.slice(0, admitted));
    if (admitted > res.jobs.length) await this.limiter.rateRefund(key, rate, admitted - res.jobs.length);
    if (verdict || admitted > 0) return { ...res, verdict };
    // The rate admitted nothing (or could not be asked): declined as a claim that took first would be.
    const retryAfterMs = took.status === "fulfilled" ? took.value.retryAfterMs : LIMITER_DOWN_RETRY_MS;
    return { ...res, verdict: { queue, reason: "RATE_LIMIT", retryAfterMs } };
  }

  /**
   * Remembers whether a take admitted all it asked for and left tokens over. A take that emptied the
   * bucket does not count: at a rate that binds, the next claim would otherwise claim beside a take
   * that admits nothing, and put it all back, every other poll.
   */
  #note(queue: string, want: number, r: RateTakeResult | undefined): void {
    if (r && r.admitted >= want && r.retryAfterMs === 0) this.#roomy.add(queue);
    else this.#roomy.delete(queue);
  }
}
