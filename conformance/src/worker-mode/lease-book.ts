import { equals } from "@bufbuild/protobuf";
import { JobState, type Settlement, SettlementSchema, SettleStatus } from "@taskq/sdk/proto";
import { leaseKey } from "./trace.js";

interface Lease {
  leaseMs: number;
  beats: number;
  settles: number;
  lost: boolean;
  /** A heartbeat was answered CANCEL_REQUESTED: the job's cancel is pending. */
  cancelRequested: boolean;
  settled: Settlement | undefined;
}

/** The reference gateway's view of the leases it handed out: what a real gateway keeps in its store. */
export class LeaseBook {
  readonly #leases = new Map<string, Lease>();

  handOut(jobId: string, attempt: number, leaseMs: number): void {
    this.#leases.set(leaseKey(jobId, attempt), {
      leaseMs,
      beats: 0,
      settles: 0,
      lost: false,
      cancelRequested: false,
      settled: undefined,
    });
  }

  /** Forget a lease whose claim answer never reached the worker. */
  release(jobId: string, attempt: number): void {
    this.#leases.delete(leaseKey(jobId, attempt));
  }

  /** Count one heartbeat of the lease; returns its ordinal (1 = first) and claimed lease length. */
  beat(jobId: string, attempt: number): { n: number; leaseMs: number; gone: boolean } | undefined {
    const l = this.#leases.get(leaseKey(jobId, attempt));
    if (!l) return undefined;
    l.beats++;
    return { n: l.beats, leaseMs: l.leaseMs, gone: l.lost || l.settled !== undefined };
  }

  markLost(jobId: string, attempt: number): void {
    const l = this.#leases.get(leaseKey(jobId, attempt));
    if (l) l.lost = true;
  }

  markCancelRequested(jobId: string, attempt: number): void {
    const l = this.#leases.get(leaseKey(jobId, attempt));
    if (l) l.cancelRequested = true;
  }

  /** Count one settle of the lease; returns its ordinal (1 = first), 0 for an unknown lease. */
  settleOrdinal(jobId: string, attempt: number): number {
    const l = this.#leases.get(leaseKey(jobId, attempt));
    if (!l) return 0;
    return ++l.settles;
  }

  /**
   * Apply a settlement as a real gateway would: idempotent, fenced, refusing a changed outcome. A
   * released lease is gone (its job went back for its next attempt): any other settle of it answers
   * LEASE_LOST, an identical one ACCEPTED.
   */
  settle(
    s: Settlement,
    forced: SettleStatus | undefined,
  ): { status: SettleStatus; state: JobState; applied?: boolean } {
    const ref = s.lease;
    const l = ref ? this.#leases.get(leaseKey(ref.jobId, ref.attempt)) : undefined;
    if (!l) return { status: SettleStatus.NOT_FOUND, state: JobState.UNSPECIFIED };
    if (forced !== undefined && forced !== SettleStatus.ACCEPTED)
      return { status: forced, state: JobState.UNSPECIFIED };
    if (l.lost) return { status: SettleStatus.LEASE_LOST, state: JobState.UNSPECIFIED };
    if (l.settled && !sameOutcome(l.settled, s))
      return {
        status: l.settled.outcome.case === "released" ? SettleStatus.LEASE_LOST : SettleStatus.CONFLICT,
        state: JobState.UNSPECIFIED,
      };
    // `applied`: this settle changed the job (not a repeat).
    const applied = l.settled === undefined;
    l.settled ??= s;
    return { status: SettleStatus.ACCEPTED, state: stateAfter(s, l.cancelRequested), applied };
  }
}

function sameOutcome(a: Settlement, b: Settlement): boolean {
  const strip = (s: Settlement) => ({ ...s, duration: undefined });
  return equals(SettlementSchema, strip(a), strip(b));
}

function stateAfter(s: Settlement, cancelRequested: boolean): JobState {
  switch (s.outcome.case) {
    case "released":
      return cancelRequested ? JobState.CANCELLED : JobState.QUEUED;
    case "success":
      return JobState.SUCCEEDED;
    case "cancelled":
      return JobState.CANCELLED;
    case "failure":
      return s.outcome.value.retryable ? JobState.SCHEDULED : JobState.FAILED;
    default:
      return JobState.UNSPECIFIED;
  }
}
