import { NotFoundError } from "../errors.js";
import { GATES } from "../gates/gates.js";
import type { Limiter } from "../limiter/limiter.js";
import type { ExplainedJobRow, ExplainStore, QueueFactsRow } from "../store/explain-store.js";
import type { FlowLimitRow, QueueSettings, QueueStore } from "../store/queue-store.js";
import { estimate } from "./estimate.js";
import { GATE_READERS, type GateContext } from "./gate-readers.js";
import { iso, type Reason, wait } from "./reason.js";

/** What holds a job back, or what happened to it (the wire's Explanation). */
export interface Explanation {
  queue: string;
  /** null: a queue explained with no job waiting. */
  job: ExplainedJobRow | null;
  reasons: Reason[];
  firstBlocking: Reason | null;
  estimatedStartMs: number | null;
  summary: string;
}

/** A queue nobody has polled for this long counts as unclaimed (the "workers" reason), ms. */
export const NO_POLL_MS = 5 * 60_000;

/**
 * Explains a job that is not running: before the gates, whether it is scheduled (a retry's backoff, a
 * redrive's smear); then every gate of gates/gates.ts, in order, through its reader (gate-readers.ts);
 * then its place in claim order, its TTL and who polls its queue; an estimated start from all of them.
 * For a running or finished job, its attempts, lease and (with prefetch) where it probably is.
 * Reads only: no token taken, no slot spent, nothing written.
 */
export class Explainer {
  constructor(
    private readonly store: ExplainStore,
    private readonly queues: QueueStore,
    private readonly limiter: Limiter,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Throws NotFoundError for an unknown job. */
  async job(id: string): Promise<Explanation> {
    const job = await this.store.job(id);
    if (!job) throw new NotFoundError(`job ${id} not found`);
    return this.explain(job.queue, job, this.clock());
  }

  /** The queue's next job explained, or with none waiting, what would hold one back. */
  async queue(name: string): Promise<Explanation> {
    const now = this.clock();
    const settings = await this.queues.queueGet(name); // NotFoundError for a queue never seen
    const id = await this.store.nextJob(name, settings.priority_aging_seconds, now);
    const job = id === null ? null : await this.store.job(id);
    return this.explain(name, job, now);
  }

  private async explain(queue: string, job: ExplainedJobRow | null, now: number): Promise<Explanation> {
    if (job && job.state === "running") return this.running(job, now);
    if (job && job.state !== "queued" && job.state !== "scheduled") return finished(job);
    const [settings, facts] = await Promise.all([
      this.queues.queuesGet([queue]).then((m) => m.get(queue) ?? null),
      this.store.queue(queue, now),
    ]);
    let limits: Promise<Map<string, FlowLimitRow>> | undefined;
    const ctx: GateContext = {
      queue,
      settings,
      job,
      facts,
      limiter: this.limiter,
      flowLimits: () => {
        limits ??= this.queues.flowLimitsList().then((rows) => new Map(rows.map((r) => [r.flowKey, r])));
        return limits;
      },
      nowMs: now,
    };
    const [gates, position] = await Promise.all([
      Promise.all(GATES.map(({ gate }) => GATE_READERS[gate](ctx))),
      job ? this.position(job, settings, facts, now) : null,
    ]);
    const before = job?.state === "scheduled" ? [scheduled(job, now)] : [];
    const workers = polling(facts, now);
    const reasons = [
      ...before,
      ...gates.filter((r): r is Reason => r !== null),
      ...(position ? [position] : []),
    ];
    const est = job ? estimate([...reasons, workers], facts, now) : null;
    if (job?.expires_ms != null) reasons.push(ttl(job.expires_ms, est?.atMs ?? null));
    reasons.push(workers);
    const firstBlocking = reasons.find((r) => r.blocking) ?? null;
    const head = job
      ? est?.atMs != null
        ? `estimated start ${iso(est.atMs)} (in ${wait(est.atMs - now)})`
        : `no estimate: ${est?.why ?? "unknown"}`
      : "no job waits in this queue";
    return {
      queue,
      job,
      reasons,
      firstBlocking,
      estimatedStartMs: est?.atMs ?? null,
      summary: `${head}; ${firstBlocking ? `first blocking: ${firstBlocking.gate}: ${firstBlocking.summary}` : "nothing holds it back"}`,
    };
  }

  /** Its place in claim order, its aging credit, and how fast the queue has been claimed lately. */
  private async position(
    job: ExplainedJobRow,
    settings: QueueSettings | null,
    facts: QueueFactsRow,
    now: number,
  ): Promise<Reason> {
    const aging = settings?.priority_aging_seconds ?? null;
    const ahead = await this.store.ahead(job, aging, now);
    const minutes = Math.max(1, now - facts.claims_since_ms) / 60_000;
    const perMinute = Math.round((facts.claims_5m / minutes) * 10) / 10;
    const figures: Reason["figures"] = {
      ahead,
      priority: job.priority,
      claims_last_5_minutes: facts.claims_5m,
      claims_per_minute: perMinute,
    };
    let agingText = "";
    if (aging !== null && job.run_ms <= now) {
      const steps = Math.floor((now - job.run_ms) / (aging * 1000));
      const nextStep = job.run_ms + (steps + 1) * aging * 1000;
      Object.assign(figures, { aging_seconds: aging, aging_credit: steps, next_step_at: iso(nextStep) });
      agingText = ` + ${steps} aging step${steps === 1 ? "" : "s"}, the next at ${iso(nextStep)}`;
    }
    return {
      gate: "position",
      verdict: null,
      blocking: ahead > 0,
      summary: `${ahead} job${ahead === 1 ? "" : "s"} ahead of it in claim order (priority ${job.priority}${agingText}); the queue claimed ${facts.claims_5m} in the last 5 minutes (${perMinute}/min)`,
      figures,
      nextAtMs: null,
    };
  }

  /** A running job: its attempt and lease, and whether it probably waits in its worker's buffer. */
  private async running(job: ExplainedJobRow, now: number): Promise<Explanation> {
    const worker = job.worker_id ?? "";
    const n = job.attempt - job.attempt_floor;
    const of = job.max_attempts - job.attempt_floor;
    const lease: Reason = {
      gate: "lease",
      verdict: null,
      blocking: false,
      summary: `attempt ${n} of ${of}, claimed by ${worker || "(no worker id)"} at ${iso(job.started_ms ?? now)}; lease ends at ${iso(job.lease_deadline_ms ?? now)}${job.last_error ? `; last error ${job.last_error.type}: ${job.last_error.message}` : ""}`,
      figures: {
        attempt: n,
        max_attempts: of,
        worker_id: worker,
        claimed_at: iso(job.started_ms ?? now),
        lease_deadline: iso(job.lease_deadline_ms ?? now),
        last_error: job.last_error ? `${job.last_error.type}: ${job.last_error.message}` : null,
      },
      nextAtMs: job.lease_deadline_ms,
    };
    const [slots, before] = await Promise.all([
      this.store.workerSlots(worker, now),
      this.store.heldBefore(worker, job),
    ]);
    const buffered = slots !== null && before >= slots;
    const prefetch: Reason = {
      gate: "prefetch",
      verdict: null,
      blocking: buffered,
      summary:
        slots === null
          ? `the worker does not report its job slots, so the gateway cannot tell whether the job runs or waits in a prefetch buffer (${before} of its jobs claimed before this one are still running)`
          : buffered
            ? `probably waiting in ${worker}'s prefetch buffer: it has ${slots} job slots and ${before} jobs claimed before this one still running (a worker starts its jobs in claim order; settles in flight may not have arrived yet)`
            : `probably running: ${worker} has ${slots} job slots and ${before} jobs claimed before this one still running`,
      figures: { job_slots: slots, claimed_before_and_running: before, buffered },
      nextAtMs: null,
    };
    return {
      queue: job.queue,
      job,
      reasons: [lease, prefetch],
      firstBlocking: buffered ? prefetch : null,
      estimatedStartMs: null,
      summary: `running: ${lease.summary}${buffered ? "; probably not started yet (prefetch buffer)" : ""}`,
    };
  }
}

/** Before the gates: a scheduled job waits for its run_at, and why it has one. */
function scheduled(job: ExplainedJobRow, now: number): Reason {
  const tried = job.attempt - job.attempt_floor;
  const of = job.max_attempts - job.attempt_floor;
  const why =
    tried > 0
      ? `retry ${tried + 1} of ${of} after a failure${job.last_error ? ` (${job.last_error.type}: ${job.last_error.message})` : ""}, backing off`
      : job.attempt_floor > 0
        ? "redriven after failing, its start smeared"
        : "scheduled when enqueued (run_at or delay)";
  const due = job.run_ms <= now;
  return {
    gate: "scheduled",
    verdict: null,
    blocking: true,
    summary: `${why}: ${due ? `due since ${iso(job.run_ms)}, made ready by the next maintenance tick` : `runs at ${iso(job.run_ms)}`}`,
    figures: {
      run_at: iso(job.run_ms),
      attempt: tried,
      max_attempts: of,
      why: tried > 0 ? "retry" : job.attempt_floor > 0 ? "redrive" : "enqueue",
    },
    nextAtMs: Math.max(job.run_ms, now),
  };
}

/** After position: when the job expires, and whether that comes before its estimated start. */
function ttl(expiresMs: number, estimateMs: number | null): Reason {
  const before = estimateMs !== null && expiresMs < estimateMs;
  return {
    gate: "ttl",
    verdict: null,
    blocking: false,
    summary: `expires at ${iso(expiresMs)}${before ? ", before its estimated start: it will be cancelled (expired_ttl) unless claimed sooner" : estimateMs !== null ? ", after its estimated start" : ""}`,
    figures: { expires_at: iso(expiresMs), expires_before_estimate: before },
    nextAtMs: expiresMs,
  };
}

/** Last: whether any worker polls the queue (the gateways' worker records, taskq.workers). */
function polling(facts: QueueFactsRow, now: number): Reason {
  const last = facts.last_poll_ms;
  const idle = facts.workers === 0 || last === null || now - last > NO_POLL_MS;
  return {
    gate: "workers",
    verdict: null,
    blocking: idle,
    summary: idle
      ? `no worker has polled this queue in the last ${NO_POLL_MS / 60_000} minutes${last !== null ? ` (last poll ${iso(last)})` : ""}`
      : `${facts.workers} worker${facts.workers === 1 ? "" : "s"} polling it, the last poll at ${iso(last)}`,
    figures: {
      workers: facts.workers,
      last_poll_at: last === null ? null : iso(last),
      window_minutes: NO_POLL_MS / 60_000,
    },
    nextAtMs: null,
  };
}

/** A finished job: how it ended, after how many attempts, and its last error. */
function finished(job: ExplainedJobRow): Explanation {
  const n = job.attempt - job.attempt_floor;
  const err = job.last_error ? `; last error ${job.last_error.type}: ${job.last_error.message}` : "";
  return {
    queue: job.queue,
    job,
    reasons: [],
    firstBlocking: null,
    estimatedStartMs: null,
    summary: `${job.state}${job.outcome && job.outcome !== job.state ? ` (${job.outcome})` : ""}${job.finished_ms ? ` at ${iso(job.finished_ms)}` : ""} after ${n} attempt${n === 1 ? "" : "s"} of ${job.max_attempts - job.attempt_floor}${err}`,
  };
}
