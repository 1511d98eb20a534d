import type { Db } from "./db.js";
import { type AttemptRow, jobAttempts } from "./job-attempts.js";
import { loadQueries } from "./queries.js";
import type {
  AttemptRecord,
  ClaimedJob,
  EnqueuedJob,
  JobRecord,
  JobStateName,
  LeaseExtension,
  LeaseKey,
  LeaseOutcome,
  NewJob,
  Settlement,
  SettleOutcome,
} from "./types.js";

const jobs = loadQueries("jobs.sql", [
  "JobsEnqueue",
  "JobsEnqueueClaim",
  "JobsByIdempotencyKey",
  "JobsClaim",
  "JobsUnclaim",
  "JobsReadyFlowKeys",
  "JobsRelease",
  "JobsSettle",
  "JobsSettleStatus",
  "LeasesExtend",
  "JobGet",
  "JobAttempts",
  "JobQueues",
  "JobCancel",
] as const);
const maint = loadQueries("maintenance.sql", [
  "LeasesRescue",
  "JobsPromote",
  "JobsExpireTtl",
  "JobsMoveFinished",
  "JobHistoryKeep",
  "LiveJobsDeadRows",
  "LiveJobsVacuum",
  "NotifyQueues",
  "LeaderAcquire",
  "LeaderRelease",
  "JobLevels",
  "BreakerSamplesPrune",
  "ThrottledPrune",
  "AdaptConcurrency",
] as const);

/** The channel every enqueue that makes a job ready notifies, with the queue name as payload. */
export const READY_CHANNEL = "taskq_jobs";

/** The gates taskq.jobs_claim decides under each queue's row lock. */
export type LockedReason = "PAUSED" | "BREAKER_OPEN" | "BREAKER_PROBING" | "MAX_RUNNING" | "RAMPING";

/** A queue one of those gates declined; retryAfterMs null where the gateway's own retry applies. */
export interface LockedVerdict {
  queue: string;
  reason: LockedReason;
  retryAfterMs: number | null;
}

/** What one claim statement answers, per poll: its jobs, and the queues declined for it. */
export interface ClaimOutcome {
  jobs: ClaimedJob[][];
  verdicts: LockedVerdict[][];
}

/** Optional pinned time for tests; null uses the database's now(). */
type Now = Date | null | undefined;

const bytes = (v: Uint8Array | null): Uint8Array =>
  v === null ? new Uint8Array(0) : v instanceof Uint8Array ? v : new Uint8Array(v);

/**
 * Every read and write of jobs. One SQL implementation serves Postgres and PGlite; hot paths
 * (enqueue, claim, settle, heartbeat) take batches and cost one statement each.
 */
export class Store {
  /** Finished jobs stay for the maintenance tick to delete past retention, unless deleteFinished. */
  readonly #keepFinished: boolean;
  readonly #gateway: string | null;

  constructor(
    readonly db: Db,
    options: {
      /** A settle that finishes its job deletes it (a retention of 0 s) rather than keeping it. */
      deleteFinished?: boolean;
      /** This gateway's instance id, kept with each attempt it ends (taskq.job_attempts.gateway). */
      gateway?: string;
    } = {},
  ) {
    this.#keepFinished = !options.deleteFinished;
    this.#gateway = options.gateway ?? null;
  }

  async jobsEnqueue(batch: readonly NewJob[], now?: Now): Promise<EnqueuedJob[]> {
    if (batch.length === 0) return [];
    const rows = await this.db.query<EnqueuedRow>(jobs.JobsEnqueue, enqueueParams(batch, now));
    return this.matchInserted(batch, rows);
  }

  /**
   * Enqueues a batch and claims, in the same statement, for polls parked on this gateway (as
   * jobsClaimMany does for them): see taskq.jobs_enqueue_claim. All or nothing, as either alone.
   */
  async jobsEnqueueClaim(
    batch: readonly NewJob[],
    claim: ManyPolls,
    now?: Now,
  ): Promise<{ enqueued: EnqueuedJob[]; claimed: ClaimOutcome }> {
    const c = claimParams(claim);
    const rows = await this.db.query<ClaimRow & { enqueued_id: string | null; enqueued_key: string | null }>(
      jobs.JobsEnqueueClaim,
      [...enqueueParams(batch, now), c.queues, c.limits, c.leaseMs, c.workers, c.blocked],
    );
    const inserted: EnqueuedRow[] = [];
    const claimRows: ClaimRow[] = [];
    for (const r of rows) {
      if (r.enqueued_id === null) claimRows.push(r);
      else inserted.push({ id: r.enqueued_id, queue: r.queue, idempotency_key: r.enqueued_key });
    }
    return {
      enqueued: await this.matchInserted(batch, inserted),
      claimed: claimOutcome(claimRows, claim.polls.length),
    };
  }

  /** Maps inserted rows back to input order; keyed duplicates resolve to the job that holds the key. */
  private async matchInserted(
    batch: readonly NewJob[],
    rows: readonly EnqueuedRow[],
  ): Promise<EnqueuedJob[]> {
    const keyOf = (queue: string, key: string) => `${queue}\u0000${key}`;
    const insertedByKey = new Map<string, string>();
    const unkeyed: string[] = [];
    for (const r of rows) {
      if (r.idempotency_key === null) unkeyed.push(r.id);
      else insertedByKey.set(keyOf(r.queue, r.idempotency_key), r.id);
    }
    // Ids grow in insertion order, which follows input order.
    unkeyed.sort((a, b) => Number(BigInt(a) - BigInt(b)));
    const missing = batch.filter(
      (j) => j.idempotencyKey !== null && !insertedByKey.has(keyOf(j.queue, j.idempotencyKey)),
    );
    const existing = new Map<string, string>();
    if (missing.length > 0) {
      const found = await this.db.query<{ id: string; queue: string; idempotency_key: string }>(
        jobs.JobsByIdempotencyKey,
        [missing.map((j) => j.queue), missing.map((j) => j.idempotencyKey)],
      );
      for (const r of found) existing.set(keyOf(r.queue, r.idempotency_key), r.id);
    }
    const seen = new Set<string>();
    let next = 0;
    return batch.map((j) => {
      if (j.idempotencyKey === null) return { id: unkeyed[next++] as string, duplicate: false };
      const k = keyOf(j.queue, j.idempotencyKey);
      const inserted = insertedByKey.get(k);
      const first = inserted !== undefined && !seen.has(k);
      seen.add(k);
      const id = inserted ?? existing.get(k);
      if (id === undefined) throw new Error(`job with idempotency key ${j.idempotencyKey} vanished`);
      return { id, duplicate: !first };
    });
  }

  /** Claims for one poll (see jobsClaimMany); a declined queue simply gives no jobs. */
  async jobsClaim(
    p: {
      queues: readonly string[];
      limit: number;
      leaseMs: number;
      workerId: string;
      blockedFlowKeys?: readonly string[];
    },
    now?: Now,
  ): Promise<ClaimedJob[]> {
    const {
      jobs: [claimed = []],
    } = await this.jobsClaimMany({ queues: p.queues, blockedFlowKeys: p.blockedFlowKeys, polls: [p] }, now);
    return claimed;
  }

  /**
   * Claims for several polls of the same queues in one statement (taskq.jobs_claim): pause, breaker and
   * max_running are decided under each queue's row lock. The jobs and verdicts of poll i are at index
   * i: at most its `limit` jobs, each leased with that poll's lease and worker id, the best jobs to the
   * first poll. All limits 0 only asks for the verdicts.
   */
  async jobsClaimMany(p: ManyPolls, now?: Now): Promise<ClaimOutcome> {
    const c = claimParams(p);
    const rows = await this.db.query<ClaimRow>(jobs.JobsClaim, [
      c.queues,
      c.limits,
      c.leaseMs,
      c.workers,
      now ?? null,
      c.blocked,
    ]);
    return claimOutcome(rows, p.polls.length);
  }

  /** (queue, flow key) pairs with ready jobs, for queues whose every ready job has one of `keys`. */
  async jobsReadyFlowKeys(
    queues: readonly string[],
    keys: readonly string[],
  ): Promise<{ queue: string; flowKey: string }[]> {
    const rows = await this.db.query<{ queue: string; flow_key: string }>(jobs.JobsReadyFlowKeys, [
      queues,
      keys,
    ]);
    return rows.map((r) => ({ queue: r.queue, flowKey: r.flow_key }));
  }

  /** Undoes claims never handed to a worker; the attempt is restored. */
  async jobsUnclaim(leases: readonly LeaseKey[]): Promise<number> {
    if (leases.length === 0) return 0;
    const rows = await this.db.query(jobs.JobsUnclaim, [
      leases.map((l) => l.jobId),
      leases.map((l) => l.attempt),
    ]);
    return rows.length;
  }

  /** Puts back claimed jobs that could not be delivered; returns the queues that got jobs back. */
  async jobsRelease(leases: readonly LeaseKey[]): Promise<string[]> {
    if (leases.length === 0) return [];
    const rows = await this.db.query<{ queue: string }>(jobs.JobsRelease, [
      leases.map((l) => l.jobId),
      leases.map((l) => l.attempt),
      this.#gateway,
    ]);
    return rows.map((r) => r.queue);
  }

  async jobsSettle(batch: readonly Settlement[], now?: Now): Promise<SettleOutcome[]> {
    if (batch.length === 0) return [];
    const applied = await this.db.query<SettledRow>(jobs.JobsSettle, [
      ...settleParams(batch, now, this.#keepFinished),
      this.#gateway,
    ]);
    return this.settleOutcomes(batch, applied);
  }

  /** Each settlement's outcome, from the rows it applied to; the others are classified by a lookup. */
  private async settleOutcomes(
    batch: readonly Settlement[],
    applied: readonly SettledRow[],
  ): Promise<SettleOutcome[]> {
    // A job is running under one attempt at a time, so its id finds the row a settle applied to.
    const appliedById = new Map<string, SettledRow>();
    for (const r of applied) appliedById.set(r.id, r);
    const appliedTo = (s: Settlement) => {
      const r = appliedById.get(s.jobId);
      return r !== undefined && r.attempt === s.attempt ? r : undefined;
    };
    const unapplied = batch.filter((s) => appliedTo(s) === undefined);
    const current = new Map<string, SettleStatusRow>();
    if (unapplied.length > 0) {
      const rows = await this.db.query<SettleStatusRow & { id: string }>(jobs.JobsSettleStatus, [
        unapplied.map((s) => s.jobId),
      ]);
      for (const r of rows) current.set(r.id, r);
    }
    return batch.map((s): SettleOutcome => {
      const done = appliedTo(s);
      if (!done) return unappliedOutcome(s, current.get(s.jobId));
      const nextRunAt = done.next_run_at_ms === null ? null : new Date(Math.floor(done.next_run_at_ms));
      return {
        jobId: s.jobId,
        attempt: s.attempt,
        status: "accepted",
        state: done.state,
        nextRunAt,
        queue: done.queue,
      };
    });
  }

  async leasesExtend(batch: readonly LeaseExtension[], now?: Now): Promise<LeaseOutcome[]> {
    if (batch.length === 0) return [];
    const rows = await this.db.query<{
      id: string;
      attempt: number;
      lease_deadline: Date;
      cancel_requested: boolean;
    }>(jobs.LeasesExtend, [
      batch.map((l) => l.jobId),
      batch.map((l) => l.attempt),
      batch.map((l) => l.extendMs),
      now ?? null,
    ]);
    const byKey = new Map(rows.map((r) => [`${r.id}/${r.attempt}`, r]));
    return batch.map((l) => {
      const r = byKey.get(`${l.jobId}/${l.attempt}`);
      if (!r) return { jobId: l.jobId, attempt: l.attempt, state: "lease_lost", leaseDeadline: null };
      return {
        jobId: l.jobId,
        attempt: l.attempt,
        state: r.cancel_requested ? "cancel_requested" : "extended",
        leaseDeadline: r.lease_deadline,
      };
    });
  }

  async jobGet(id: string): Promise<JobRecord | null> {
    const [r] = await this.db.query<Record<string, unknown>>(jobs.JobGet, [id]);
    return r ? toJobRecord(r) : null;
  }

  /** The job's attempts, oldest first: those that did not succeed, then the current one (see jobAttempts). */
  async jobAttempts(job: JobRecord): Promise<AttemptRecord[]> {
    return jobAttempts(job, await this.db.query<AttemptRow>(jobs.JobAttempts, [job.id]));
  }

  /** The distinct queues of these jobs; unknown ids are left out. */
  async jobQueues(ids: readonly string[]): Promise<string[]> {
    return (await this.db.query<{ queue: string }>(jobs.JobQueues, [ids])).map((r) => r.queue);
  }

  /** Cancels a waiting job now, or flags a running one; returns the job after, or null when unknown. */
  async jobCancel(id: string, reason: string, now?: Now): Promise<JobRecord | null> {
    const rows = await this.db.query(jobs.JobCancel, [id, reason, now ?? null]);
    return rows.length === 0 ? null : this.jobGet(id);
  }

  /** Expired leases back to their queues (or failed); returns how many and which queues got work. */
  async leasesRescue(limit: number, now?: Now): Promise<{ count: number; readyQueues: string[] }> {
    const rows = await this.db.query<{ queue: string; state: JobStateName }>(maint.LeasesRescue, [
      limit,
      now ?? null,
      this.#gateway,
    ]);
    return {
      count: rows.length,
      readyQueues: distinct(rows.filter((r) => r.state === "queued").map((r) => r.queue)),
    };
  }

  async jobsPromote(limit: number, now?: Now): Promise<{ count: number; readyQueues: string[] }> {
    const rows = await this.db.query<{ queue: string }>(maint.JobsPromote, [limit, now ?? null]);
    return { count: rows.length, readyQueues: distinct(rows.map((r) => r.queue)) };
  }

  async jobsExpireTtl(limit: number, now?: Now): Promise<number> {
    return (await this.db.query(maint.JobsExpireTtl, [limit, now ?? null])).length;
  }

  /** Finished jobs still in the live table to the history, at most `limit`; returns how many moved. */
  async jobsMoveFinished(limit: number): Promise<number> {
    return (await this.db.query<{ moved: number }>(maint.JobsMoveFinished, [limit]))[0]?.moved ?? 0;
  }

  /**
   * Retention of finished jobs: records it for reads, makes the coming days' history partitions, drops
   * those past it. Returns the jobs deleted one by one (at most `limit`); a dropped partition's are not counted.
   */
  async jobHistoryKeep(limit: number, retentionSeconds: number, now?: Now): Promise<number> {
    const rows = await this.db.query<{ deleted: number }>(maint.JobHistoryKeep, [
      limit,
      now ?? null,
      retentionSeconds,
    ]);
    return rows[0]?.deleted ?? 0;
  }

  /**
   * Vacuums the live jobs' table when it holds at least `deadRows` dead rows (Postgres' own count) and
   * nothing vacuumed it in the last `quietSeconds`, unless another vacuum holds it; returns whether it
   * did. Where autovacuum runs, it vacuums this small table at each round (a minute apart, by default)
   * and this does nothing; where it is off or busy elsewhere, this stands in for it. The table stays as
   * small as the backlog, so a vacuum is quick.
   */
  async liveJobsVacuum(deadRows: number, quietSeconds = 60): Promise<boolean> {
    const [row] = await this.db.query<{ dead: string; since_vacuum_s: number | null }>(
      maint.LiveJobsDeadRows,
    );
    if (Number(row?.dead ?? 0) < deadRows) return false;
    if (row?.since_vacuum_s != null && row.since_vacuum_s < quietSeconds) return false;
    await this.db.query(maint.LiveJobsVacuum);
    return true;
  }

  /** Wakes long polls waiting on these queues, on every gateway. */
  async notifyQueues(queues: readonly string[]): Promise<void> {
    if (queues.length > 0) await this.db.query(maint.NotifyQueues, [queues]);
  }

  /** Takes or renews a named leadership lease; true while we hold it. */
  async leaderAcquire(name: string, holder: string, ttlMs: number, now?: Now): Promise<boolean> {
    return (await this.db.query(maint.LeaderAcquire, [name, holder, ttlMs, now ?? null])).length > 0;
  }

  async jobLevels(): Promise<{ queue: string; state: JobStateName; count: number }[]> {
    return this.db.query(maint.JobLevels);
  }

  /** Deletes throttled-verdict minutes older than two hours; returns how many. */
  async throttledPrune(limit: number, now?: Now): Promise<number> {
    return (await this.db.query(maint.ThrottledPrune, [limit, now ?? null])).length;
  }

  /** Deletes breaker samples past their queue's largest window; returns how many. */
  async breakerSamplesPrune(limit: number, now?: Now): Promise<number> {
    return (await this.db.query(maint.BreakerSamplesPrune, [limit, now ?? null])).length;
  }

  /**
   * One round of the adaptive limit's controller (taskq.adapt_concurrency): every adaptive queue whose
   * interval has passed gets its decision, whichever gateway calls; returns how many limits changed.
   */
  async adaptConcurrency(now?: Now): Promise<number> {
    const [row] = await this.db.query<{ changed: number }>(maint.AdaptConcurrency, [now ?? null]);
    return row?.changed ?? 0;
  }

  async leaderRelease(name: string, holder: string): Promise<void> {
    await this.db.query(maint.LeaderRelease, [name, holder]);
  }
}

const distinct = (xs: string[]) => [...new Set(xs)];

/** Polls of the same queues claimed together (jobsClaimMany). */
export interface ManyPolls {
  queues: readonly string[];
  blockedFlowKeys?: readonly string[] | undefined;
  polls: readonly { limit: number; leaseMs: number; workerId: string }[];
}

interface EnqueuedRow {
  id: string;
  queue: string;
  idempotency_key: string | null;
}

/** taskq.jobs_enqueue's arguments, in order. */
const enqueueParams = (batch: readonly NewJob[], now: Now): unknown[] => [
  batch.map((j) => j.queue),
  batch.map((j) => j.payload),
  batch.map((j) => j.contentType),
  batch.map((j) => j.priority),
  batch.map((j) => j.flowKey),
  batch.map((j) => j.runAt),
  batch.map((j) => j.delayMs),
  batch.map((j) => j.ttlSeconds),
  batch.map((j) => j.maxAttempts),
  batch.map((j) => j.idempotencyKey),
  batch.map((j) => JSON.stringify(j.headers)),
  now ?? null,
];

/** A row taskq.jobs_settle applied a settlement to. */
interface SettledRow {
  id: string;
  attempt: number;
  queue: string;
  state: JobStateName;
  next_run_at_ms: number | null;
}

/** taskq.jobs_settle's arguments, in order. */
const settleParams = (batch: readonly Settlement[], now: Now, keepFinished: boolean): unknown[] => [
  batch.map((s) => s.jobId),
  batch.map((s) => s.attempt),
  batch.map((s) => s.kind),
  batch.map((s) => (s.kind === "success" ? s.result : null)),
  batch.map((s) =>
    s.kind === "failure"
      ? JSON.stringify(s.error)
      : s.kind === "cancel"
        ? JSON.stringify({ type: "Cancelled", message: s.reason, retryable: false })
        : null,
  ),
  batch.map((s) => (s.kind === "failure" ? s.delayMs : null)),
  now ?? null,
  batch.map((s) => (s.durationMs === undefined || s.durationMs === null ? null : Math.round(s.durationMs))),
  keepFinished,
];

/** taskq.jobs_claim's arguments but its clock. */
const claimParams = (p: ManyPolls) => ({
  queues: p.queues,
  limits: p.polls.map((x) => x.limit),
  leaseMs: p.polls.map((x) => x.leaseMs),
  workers: p.polls.map((x) => x.workerId),
  blocked: p.blockedFlowKeys ?? [],
});

/** taskq.jobs_claim's rows as each poll's jobs (best first) and verdicts. */
function claimOutcome(rows: readonly ClaimRow[], polls: number): ClaimOutcome {
  const out: ClaimOutcome = { jobs: [], verdicts: [] };
  for (let i = 0; i < polls; i++) {
    out.jobs.push([]);
    out.verdicts.push([]);
  }
  for (const r of rows) {
    if (r.verdict === null) out.jobs[(r.poll as number) - 1]?.push(toClaimedJob(r));
    else {
      const v = { queue: r.queue, reason: r.verdict, retryAfterMs: r.retry_ms };
      // A verdict without a poll declines the queue for every poll.
      if (r.poll === null) for (const vs of out.verdicts) vs.push(v);
      else out.verdicts[r.poll - 1]?.push(v);
    }
  }
  for (const claimed of out.jobs) claimed.sort(byPriorityThenAge);
  return out;
}

/** A job or a verdict of taskq.jobs_claim (see ClaimOutcome). */
interface ClaimRow extends JobRow {
  poll: number | null;
  verdict: LockedReason | null;
  retry_ms: number | null;
}

interface JobRow {
  id: string;
  queue: string;
  attempt: number;
  max_attempts: number;
  lease_deadline_ms: number;
  payload: Uint8Array;
  content_type: string;
  priority: number;
  flow_key: string | null;
  enqueued_at_ms: number;
  headers: Record<string, string>;
}

const toClaimedJob = (r: JobRow): ClaimedJob => ({
  id: r.id,
  queue: r.queue,
  attempt: r.attempt,
  maxAttempts: r.max_attempts,
  leaseDeadlineMs: r.lease_deadline_ms,
  payload: bytes(r.payload),
  contentType: r.content_type,
  priority: r.priority,
  flowKey: r.flow_key,
  enqueuedAtMs: r.enqueued_at_ms,
  headers: r.headers,
});

const byPriorityThenAge = (a: ClaimedJob, b: ClaimedJob) =>
  b.priority - a.priority || a.enqueuedAtMs - b.enqueuedAtMs;

function toJobRecord(r: Record<string, unknown>): JobRecord {
  const date = (v: unknown) => (v === null || v === undefined ? null : (v as Date));
  return {
    id: r.id as string,
    queue: r.queue as string,
    state: r.state as JobStateName,
    attempt: r.attempt as number,
    maxAttempts: r.max_attempts as number,
    priority: r.priority as number,
    flowKey: (r.flow_key as string | null) ?? null,
    payload: bytes(r.payload as Uint8Array),
    contentType: r.content_type as string,
    headers: r.headers as Record<string, string>,
    enqueuedAt: r.enqueued_at as Date,
    runAt: r.run_at as Date,
    startedAt: date(r.started_at),
    finishedAt: date(r.finished_at),
    leaseDeadline: date(r.lease_deadline),
    expiresAt: date(r.expires_at),
    outcome: (r.outcome as string | null) ?? null,
    result: r.result === null ? null : bytes(r.result as Uint8Array),
    lastError: (r.last_error as JobRecord["lastError"]) ?? null,
    cancelRequested: r.cancel_requested as boolean,
    workerId: (r.worker_id as string | null) ?? null,
  };
}

/** Where a job a settlement did not apply to stands now (taskq.jobs_settle_status). */
interface SettleStatusRow {
  attempt: number;
  state: JobStateName;
  settled_attempt: number | null;
  settled_kind: string | null;
  run_at: Date;
}

/** A settlement's outcome when it applied to nothing: not found, lease lost, a conflict, or a repeat. */
function unappliedOutcome(s: Settlement, cur: SettleStatusRow | undefined): SettleOutcome {
  const key = { jobId: s.jobId, attempt: s.attempt };
  if (!cur) return { ...key, status: "not_found", state: null, nextRunAt: null, queue: null };
  // A released attempt is over: any other settle of it finds the lease gone, as after expiry.
  if (cur.settled_attempt !== s.attempt || (cur.settled_kind === "release" && s.kind !== "release")) {
    return { ...key, status: "lease_lost", state: null, nextRunAt: null, queue: null };
  }
  if (cur.settled_kind !== s.kind)
    return { ...key, status: "conflict", state: null, nextRunAt: null, queue: null };
  // A repeat of the settle that applied: the same answer, nothing changed.
  const state: JobStateName =
    s.kind === "success"
      ? "succeeded"
      : s.kind === "cancel"
        ? "cancelled"
        : s.kind === "release"
          ? "queued"
          : cur.state === "failed"
            ? "failed"
            : "scheduled";
  return {
    ...key,
    status: "accepted",
    state,
    nextRunAt: state === "scheduled" ? cur.run_at : null,
    queue: null,
  };
}
