// The total-queue oracle, after Jepsen's total-queue checker: every acknowledged enqueue must come out
// exactly once. Delivery is at-least-once, so a job may run again, but only once the lease of the run
// before had expired: two live leases on one job, or a superseded attempt's write, is a duplicate.
// Pure: it judges logs a scenario collected, so its own tests can feed it each kind of failure.

/** What a worker reported about one attempt (one lease) of a job. Times are epoch ms on one host. */
export interface WorkerEvent {
  /** claimed: the handler started; extended: a heartbeat moved the deadline; completed: the handler
   * returned and its success is about to be settled. */
  kind: "claimed" | "extended" | "completed";
  job: string;
  attempt: number;
  worker: string;
  atMs: number;
  /** The lease deadline as the worker knew it at `atMs`. */
  leaseDeadlineMs: number;
}

/** A job as the store holds it at the end of a scenario. */
export interface StoredJob {
  job: string;
  /** taskq job state: scheduled, queued, running, succeeded, failed, cancelled. */
  state: string;
  /** The job's current attempt (its fencing token). */
  attempt: number;
  /** The attempt whose handler wrote the stored result (scenario handlers return their attempt). */
  resultAttempt: number | null;
}

export type Verdict =
  /** Came out once; `redelivered` attempts before the one stored ran out their leases (at-least-once). */
  | { kind: "settled-once"; job: string; redelivered: number }
  /** Enqueued and acknowledged, but not succeeded at the end. */
  | { kind: "lost"; job: string; reason: string }
  /** Held by two live leases, or written by a superseded attempt. */
  | { kind: "duplicated"; job: string; reason: string }
  /** Seen by a worker or the store but never enqueued, or a result no worker produced. */
  | { kind: "unexpected"; job: string; reason: string };

export interface OracleReport {
  verdicts: Verdict[];
  enqueued: number;
  settledOnce: number;
  lost: number;
  duplicated: number;
  unexpected: number;
  /** Attempts of settled jobs before the one stored (each ended by an expired lease). */
  redelivered: number;
  /** lost + duplicated + unexpected === 0. */
  ok: boolean;
}

/** Judges every enqueued job (and every job seen that was not enqueued). */
export function checkTotalQueue(input: {
  enqueued: readonly string[];
  events: readonly WorkerEvent[];
  stored: readonly StoredJob[];
}): OracleReport {
  const enqueued = new Set(input.enqueued);
  const stored = new Map(input.stored.map((s) => [s.job, s]));
  const byJob = new Map<string, WorkerEvent[]>();
  for (const e of input.events) {
    const list = byJob.get(e.job) ?? [];
    list.push(e);
    byJob.set(e.job, list);
  }
  const verdicts: Verdict[] = [];
  for (const job of enqueued) verdicts.push(judge(job, byJob.get(job) ?? [], stored.get(job)));
  const strangers = new Set([...byJob.keys(), ...stored.keys()].filter((j) => !enqueued.has(j)));
  for (const job of strangers) {
    verdicts.push({ kind: "unexpected", job, reason: "seen by a worker or the store but never enqueued" });
  }
  const count = (kind: Verdict["kind"]) => verdicts.filter((v) => v.kind === kind).length;
  const report = {
    verdicts,
    enqueued: enqueued.size,
    settledOnce: count("settled-once"),
    lost: count("lost"),
    duplicated: count("duplicated"),
    unexpected: count("unexpected"),
    redelivered: verdicts.reduce((n, v) => n + (v.kind === "settled-once" ? v.redelivered : 0), 0),
  };
  return { ...report, ok: report.lost + report.duplicated + report.unexpected === 0 };
}

function judge(job: string, events: WorkerEvent[], stored: StoredJob | undefined): Verdict {
  // Each attempt is one lease: when it was handed out, and the furthest deadline its holder knew.
  const leases = new Map<number, { claims: number; claimedAtMs: number; deadlineMs: number }>();
  for (const e of events) {
    const lease = leases.get(e.attempt) ?? { claims: 0, claimedAtMs: e.atMs, deadlineMs: e.leaseDeadlineMs };
    if (e.kind === "claimed") {
      lease.claims++;
      lease.claimedAtMs = Math.min(lease.claimedAtMs, e.atMs);
    }
    lease.deadlineMs = Math.max(lease.deadlineMs, e.leaseDeadlineMs);
    leases.set(e.attempt, lease);
  }
  const attempts = [...leases.keys()].sort((a, b) => a - b);
  for (const attempt of attempts) {
    if ((leases.get(attempt)?.claims ?? 0) > 1) {
      return { kind: "duplicated", job, reason: `attempt ${attempt} was handed out twice` };
    }
  }
  for (let i = 1; i < attempts.length; i++) {
    const before = leases.get(attempts[i - 1] as number);
    const after = leases.get(attempts[i] as number);
    if (before && after && after.claimedAtMs < before.deadlineMs) {
      return {
        kind: "duplicated",
        job,
        reason: `attempt ${attempts[i]} claimed ${before.deadlineMs - after.claimedAtMs} ms before the lease of attempt ${attempts[i - 1]} expired`,
      };
    }
  }
  if (!stored) return { kind: "lost", job, reason: "not in the store" };
  if (stored.state !== "succeeded") {
    return { kind: "lost", job, reason: `left ${stored.state} at attempt ${stored.attempt}` };
  }
  if (stored.resultAttempt !== stored.attempt) {
    return {
      kind: "duplicated",
      job,
      reason: `stale write: result of attempt ${stored.resultAttempt} stored on attempt ${stored.attempt}`,
    };
  }
  const wrote = events.some((e) => e.kind === "completed" && e.attempt === stored.resultAttempt);
  if (!wrote) {
    return {
      kind: "unexpected",
      job,
      reason: `result of attempt ${stored.resultAttempt}, which no worker completed`,
    };
  }
  return { kind: "settled-once", job, redelivered: stored.attempt - 1 };
}

/** One line per failure class with up to `examples` reasons each, for a scenario's printed figure. */
export function describeReport(report: OracleReport, examples = 3): string {
  const lines = [
    `enqueued ${report.enqueued}: settled once ${report.settledOnce}, lost ${report.lost}, duplicated ${report.duplicated}, unexpected ${report.unexpected}; redelivered after an expired lease ${report.redelivered}`,
  ];
  for (const kind of ["lost", "duplicated", "unexpected"] as const) {
    const bad = report.verdicts.filter((v) => v.kind === kind).slice(0, examples);
    for (const v of bad) lines.push(`  ${kind} ${v.job}: ${"reason" in v ? v.reason : ""}`);
  }
  return lines.join("\n");
}
