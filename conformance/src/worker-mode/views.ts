import type { Settlement } from "@taskq/sdk/proto";
import { LeaseState } from "@taskq/sdk/proto";
import { leaseKey, type Trace, type TraceEvent } from "./trace.js";

/** One lease the reference gateway handed out, as the trace shows it. */
export interface LeaseView {
  key: string;
  jobId: string;
  attempt: number;
  queue: string;
  handedT: number;
  /** Deadline from the claim, then one per extension: [answer time, new deadline]. */
  deadlines: Array<{ fromT: number; deadlineT: number }>;
  /** Arrival times of heartbeats naming it. */
  beatTs: number[];
  /** Settles sent for it (arrival time and settlement). */
  settles: Array<{ t: number; settlement: Settlement }>;
  /** When a poll first carried a settlement of it (ClaimRequest.settlements), if one did. */
  carriedT: number | undefined;
  /** When its loss or cancel was answered to a heartbeat, if it was. */
  lostT: number | undefined;
  cancelT: number | undefined;
  /** When the worker stopped holding it: first settle sent or loss answered; undefined if never. */
  endT: number | undefined;
}

/** Views over a trace that several checks need. */
export class TraceViews {
  readonly leases = new Map<string, LeaseView>();
  readonly polls: Extract<TraceEvent, { type: "poll" }>[];
  readonly readyT: number | undefined;
  readonly stopT: number | undefined;
  readonly stoppedT: number | undefined;
  readonly exit: Extract<TraceEvent, { type: "exit" }> | undefined;
  /** The end of the worker's life as the case sees it. */
  readonly endT: number;

  constructor(readonly trace: Trace) {
    this.polls = trace.of("poll");
    this.readyT = trace.first("ready")?.t;
    this.stopT = trace.first("stop_sent")?.t;
    this.stoppedT = trace.first("stopped")?.t;
    this.exit = trace.first("exit");
    this.endT = this.exit?.t ?? trace.now();
    for (const e of trace.events) this.#apply(e);
    for (const l of this.leases.values()) {
      const settledT = l.settles[0]?.t;
      const ends = [settledT, l.lostT].filter((t): t is number => t !== undefined);
      l.endT = ends.length > 0 ? Math.min(...ends) : undefined;
    }
  }

  lease(jobId: string): LeaseView | undefined {
    for (const l of this.leases.values()) if (l.jobId === jobId) return l;
    return undefined;
  }

  #apply(e: TraceEvent): void {
    switch (e.type) {
      case "claim_answer":
        e.res.jobs.forEach((j, i) => {
          const deadlineT = e.deadlines[i] ?? e.t;
          this.leases.set(leaseKey(j.id, j.attempt), {
            key: leaseKey(j.id, j.attempt),
            jobId: j.id,
            attempt: j.attempt,
            queue: j.queue,
            handedT: e.t,
            deadlines: [{ fromT: e.t, deadlineT }],
            beatTs: [],
            settles: [],
            carriedT: undefined,
            lostT: undefined,
            cancelT: undefined,
            endT: undefined,
          });
        });
        return;
      case "poll":
        for (const s of e.req.settlements) {
          const l = s.lease && this.leases.get(leaseKey(s.lease.jobId, s.lease.attempt));
          if (l) l.carriedT ??= e.t;
        }
        return;
      case "claim_released":
        for (const key of e.leases) this.leases.delete(key);
        return;
      case "beat":
        for (const ref of e.req.leases) this.leases.get(leaseKey(ref.jobId, ref.attempt))?.beatTs.push(e.t);
        return;
      case "beat_answer":
        e.res.leases.forEach((s, i) => {
          const l = s.lease && this.leases.get(leaseKey(s.lease.jobId, s.lease.attempt));
          if (!l) return;
          if (s.state === LeaseState.LEASE_LOST) l.lostT ??= e.t;
          else {
            if (s.state === LeaseState.CANCEL_REQUESTED) l.cancelT ??= e.t;
            const deadlineT = e.deadlines[i];
            if (deadlineT !== undefined && Number.isFinite(deadlineT))
              l.deadlines.push({ fromT: e.t, deadlineT });
          }
        });
        return;
      case "settle":
        for (const s of e.req.settlements) {
          const l = s.lease && this.leases.get(leaseKey(s.lease.jobId, s.lease.attempt));
          l?.settles.push({ t: e.t, settlement: s });
        }
        return;
      default:
        return;
    }
  }
}

/** Milliseconds, for messages. */
export const ms = (n: number) => `${Math.round(n)} ms`;
