import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import type { BackoffOptions } from "./backoff.js";
import { failureFromError } from "./errors.js";
import { ThrottleReason } from "./gen/taskq/v1/job_pb.js";
import { SettleStatus } from "./gen/taskq/v1/worker_pb.js";
import { Heartbeats } from "./heartbeats.js";
import { createJobContext, JobAbortError, type JobContext } from "./job-context.js";
import { LazyAbort } from "./lazy-abort.js";
import { errorFields, type Logger, stderrLogger } from "./logger.js";
import { type LookAhead, lookAheadFor, type PrefetchOption } from "./look-ahead.js";
import { encodePayload, type PayloadInput } from "./payload.js";
import { Poller, reasonName } from "./poller.js";
import { Settler } from "./settler.js";
import { Wakeup } from "./sleep.js";
import { Slots } from "./slots.js";
import { activeTracer, endHandlerSpan, runInSpan, startHandlerSpan } from "./tracing.js";
import { createTransport, requireBaseUrl, type TlsOptions } from "./transport.js";
import type { ClaimedJob } from "./wire/claimed-job.js";
import type { Outcome, SettleAnswer } from "./wire/settlement.js";
import { workerRpc } from "./wire/worker-rpc.js";

/**
 * Lifecycle of a {@link Worker}; it only moves forward. FAILED: the gateway refused the worker's
 * credentials (UNAUTHENTICATED or PERMISSION_DENIED), which no retry can fix; `run()` rejects with that
 * error and `snapshot().failure` says why.
 */
export type WorkerState = "INITIALIZED" | "RUNNING" | "DRAINING" | "STOPPED" | "FAILED";

/** Runs one job. The resolved value is the job's result; a throw fails the attempt. */
// biome-ignore lint/suspicious/noConfusingVoidType: lets `async (job) => { … }` handlers return nothing.
export type Handler = (job: JobContext) => Promise<PayloadInput | undefined | void>;

/** Options of {@link Worker}. */
export interface WorkerOptions {
  /** The gateway's gRPC address, e.g. `http://localhost:7070`. Required unless `transport` is given. */
  baseUrl?: string | undefined;
  /** Bearer token with the `worker` role; unset sends no credentials. Ignored with `transport`. */
  token?: string | undefined;
  /** TLS of an `https://` baseUrl: a private CA to trust, a client certificate for mTLS. Ignored with `transport`. */
  tls?: TlsOptions | undefined;
  /** Queues to claim from, 1 to 64 names; priority decides across them. */
  queues: string[];
  /**
   * Runs each claimed job. Its result: bytes as they are, a string as UTF-8, any other value as JSON,
   * nothing as empty. Throw {@link NonRetryableError} to fail for good, {@link RetryAfterError} (or any
   * error with a numeric `retryAfterMs`) to pick the retry delay.
   */
  handler: Handler;
  /** Most jobs running at once (job slots); a positive integer. Default 10. */
  concurrency?: number | undefined;
  /**
   * Jobs to hold beyond the free slots (the look-ahead buffer): each poll asks for its free slots plus
   * the room left in the buffer, and a buffered job starts as soon as a slot frees, in claim order, with
   * no poll in between. Buffered jobs are claimed, leased and heartbeated like running ones.
   *
   * - `"auto"` (the default): the worker holds about as many jobs as its slots start within one poll
   *   round trip, from what it measures (recent handler durations and poll round trips, smoothed),
   *   between 0 and 10 × concurrency (at least 500, at most 1000), and only while work is queued (the
   *   last poll brought all it asked for). Jobs that run longer than a few round trips get no
   *   look-ahead. A buffered job that has not started within a quarter of its
   *   lease, or once no slot has freed for a few round trips, is given back.
   * - `{ auto: true, max: N }`: the same, with at most N jobs ahead (0 to 10000).
   * - `N` (0 to 10000): always N; 0 never holds more jobs than free slots.
   *
   * Either way the gateway hands jobs of a queue with max_running, a breaker, a throttle or a
   * claim rate only to free slots, so a buffer never holds a place or a token of such a queue. Buffered
   * jobs are given back at once (a Released settlement: ready again in their place, the attempt
   * uncounted) when a poll's answer says their queue is PAUSED or its breaker is open, when their job's
   * cancel is requested, and on `stop()`.
   */
  prefetch?: PrefetchOption | undefined;
  /** Recorded on claimed jobs. Default `<hostname>/<pid>/<random 8 hex>`. */
  workerId?: string | undefined;
  /** Lease length to request, in ms (100 to 3600000). Default unset: the gateway's default lease. */
  leaseMs?: number | undefined;
  /**
   * Fixed heartbeat interval, in ms. Default unset: beat when a third of a lease has elapsed, computed
   * from each job's lease deadline, so no lease can lapse between two beats.
   */
  heartbeatIntervalMs?: number | undefined;
  /** How long one poll waits for work when none is ready, in ms (0 to 60000). Default 30000. */
  maxWaitMs?: number | undefined;
  /**
   * When fewer than a quarter of the slots are free, how long to wait for more to free before the next
   * poll, in ms (0 to 1000). A busy worker then claims jobs in batches instead of one per finished job,
   * which costs the gateway and Postgres a fraction per job; an idle worker polls at once. Default 10;
   * 0 polls as soon as one slot is free.
   */
  pollBatchWaitMs?: number | undefined;
  /**
   * How long `stop()` lets running handlers finish, in ms, before aborting them and settling them as a
   * retryable `WorkerShutdown` failure. Default 30000. 0 aborts at once.
   */
  shutdownGraceMs?: number | undefined;
  /** Backoff between reconnects of a failed stream. Defaults: 100 ms, ×2, capped at 4000 ms, ±20%. */
  reconnect?: Partial<BackoffOptions> | undefined;
  /**
   * Where to log (pino and console fit). Default {@link stderrLogger}: handler failures, stream errors
   * and refused settles at warn level, one line each on stderr; nothing while all is well. Pass
   * `silentLogger` to say nothing at all.
   */
  logger?: Logger | undefined;
  /** A ready transport (tests, a custom stack); by default one is built from `baseUrl`, `token` and `tls`. */
  transport?: Transport | undefined;
}

/** Counters and state of a worker at one instant. Counters only grow. */
export interface WorkerSnapshot {
  /** Lifecycle state at the time of the snapshot. */
  state: WorkerState;
  /** Handlers executing now. */
  running: number;
  /** Jobs held ahead of a free slot (prefetch), not started yet. */
  buffered: number;
  /** The look-ahead buffer's size now: `prefetch` when fixed, the measured size with `"auto"`. */
  lookAhead: number;
  /** Polls the gateway answered since start, with jobs or without (each one Claim message pair). */
  polls: number;
  /** Jobs claimed since start. */
  claimed: number;
  /** Successes the gateway accepted. */
  succeeded: number;
  /** Failures the gateway accepted (retryable or not, shutdown stragglers included). */
  failed: number;
  /** Cancels the gateway accepted. */
  cancelled: number;
  /** Buffered jobs given back unstarted (Released) that the gateway accepted. */
  released: number;
  /** Leases lost, learned from a heartbeat or a settle answer. */
  leaseLost: number;
  /** Settles refused: LEASE_LOST, CONFLICT or NOT_FOUND (never retried). */
  settleRefused: number;
  /** Throttled verdicts by reason name (`PAUSED`, `MAX_RUNNING`, …; `UNSPECIFIED` if unknown). */
  throttled: Record<string, number>;
  /** Claim stream failures (each followed by a reconnect after backoff). */
  claimErrors: number;
  /** Streams (claim, heartbeat, settle) re-opened after a failure. */
  reconnects: number;
  /** Why the worker FAILED (the gateway's error); undefined otherwise. */
  failure?: string | undefined;
}

/** Options of {@link Worker.stop}. */
export interface StopOptions {
  /** Overrides `shutdownGraceMs` for this stop, in ms. */
  graceMs?: number | undefined;
}

// How long an idle draining worker waits for its outstanding poll's answer before cancelling the stream.
const POLL_ANSWER_ON_DRAIN_MS = 1_000;
// After the grace deadline, how long the last settles (stragglers included) get to be answered.
const SETTLE_FLUSH_MS = 5_000;
// How often an adaptive buffer looks for jobs it should give back, while it holds any.
const BUFFER_CHECK_MS = 10;
// A buffered job waits for a slot at most this fraction of its lease.
const HOLD_LEASE_FRACTION = 1 / 4;

interface Active {
  job: ClaimedJob;
  /** The handler was started; until then the job waits in the buffer. */
  started: boolean;
  abort: LazyAbort;
  startedAt: number;
  deadlineMs: number;
  /** Until when it may wait in the buffer (Date.now ms), a fraction of its first lease. */
  holdUntil: number;
  /** A settle was sent: no more heartbeats, and the handler's own outcome is ignored. */
  settling: boolean;
  cancelRequested: boolean;
  leaseLost: boolean;
  /** Holds one job slot: from the claim until the settle is queued (or the job ends without one). */
  slot: boolean;
}

/**
 * Claims jobs from a taskq gateway and runs them, at most `concurrency` at once, over three long-lived
 * streams: Claim, Heartbeat, Settle. Never installs signal handlers or exits the process: call `stop()`.
 */
export class Worker {
  readonly #handler: Handler;
  readonly #concurrency: number;
  readonly #logger: Logger;
  readonly #graceMs: number;
  readonly #slots: Slots;
  readonly #lookAhead: LookAhead;
  /** When the last handler started (performance.now): with jobs buffered, no slot has freed since. */
  #lastStartAt = 0;
  #bufferCheck: ReturnType<typeof setTimeout> | undefined;
  readonly #poller: Poller;
  readonly #heartbeats: Heartbeats;
  readonly #settler: Settler;
  readonly #active = new Map<string, Active>();
  /** Keys of held jobs not started yet, in claim order. */
  readonly #buffer = new Set<string>();
  readonly #changed = new Wakeup();
  #state: WorkerState = "INITIALIZED";
  #stopping: Promise<void> | undefined;
  readonly #stopped: Promise<void>;
  #markStopped: () => void = () => {};
  readonly #counts = {
    running: 0,
    polls: 0,
    claimed: 0,
    succeeded: 0,
    failed: 0,
    cancelled: 0,
    released: 0,
    leaseLost: 0,
    settleRefused: 0,
    claimErrors: 0,
    reconnects: 0,
  };
  readonly #throttled: Record<string, number> = {};
  #failure: ConnectError | undefined;

  constructor(opts: WorkerOptions) {
    const concurrency = opts.concurrency ?? 10;
    validate(opts, concurrency);
    this.#handler = opts.handler;
    this.#concurrency = concurrency;
    this.#logger = opts.logger ?? stderrLogger;
    this.#graceMs = opts.shutdownGraceMs ?? 30_000;
    this.#lookAhead = lookAheadFor(opts.prefetch ?? "auto", concurrency);
    // A place holds a claimed job, running or buffered: the handlers are bounded apart, by concurrency.
    this.#slots = new Slots(concurrency, () => this.#lookAhead.size());
    this.#stopped = new Promise((resolve) => {
      this.#markStopped = resolve;
    });
    const rpc = workerRpc(
      opts.transport ?? createTransport(requireBaseUrl({ ...opts, logger: this.#logger })),
    );
    const backoff = opts.reconnect ?? {};
    const reconnected = () => {
      this.#counts.reconnects++;
    };
    this.#poller = new Poller({
      open: rpc.claim,
      queues: [...opts.queues],
      workerId: opts.workerId ?? `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`,
      lookAhead: this.#lookAhead,
      leaseMs: opts.leaseMs,
      maxWaitMs: opts.maxWaitMs ?? 30_000,
      pollBatchWaitMs: opts.pollBatchWaitMs ?? 10,
      slots: this.#slots,
      carry: () => this.#settler.carry(),
      backoff,
      logger: this.#logger,
      jobs: (jobs, verdicts) => {
        for (const job of jobs) this.#hold(job);
        // Pause is exact for starts too: no held job of a paused (or broken) queue starts after its
        // verdict, those that came in this very answer included.
        for (const v of verdicts)
          if (givesBack(v.reason)) this.#releaseBuffered(v.queue, `queue ${reasonName(v.reason)}`);
        this.#startBuffered();
      },
      throttled: (reason) => {
        this.#throttled[reason] = (this.#throttled[reason] ?? 0) + 1;
      },
      answered: () => {
        this.#counts.polls++;
        this.#changed.notify();
      },
      streamError: (err) => {
        this.#counts.claimErrors++;
        this.#failOnRefusal(err);
      },
      reconnected,
    });
    this.#heartbeats = new Heartbeats({
      open: rpc.heartbeat,
      intervalMs: opts.heartbeatIntervalMs,
      leaseMs: opts.leaseMs,
      backoff,
      logger: this.#logger,
      events: {
        extended: (key, deadlineMs) => {
          const a = this.#active.get(key);
          if (a && deadlineMs !== undefined) a.deadlineMs = deadlineMs;
        },
        lost: (key) => this.#leaseLost(key),
        cancelRequested: (key, deadlineMs) => this.#cancelRequested(key, deadlineMs),
        streamError: (err) => this.#failOnRefusal(err),
        reconnected,
      },
    });
    this.#settler = new Settler({
      open: rpc.settle,
      backoff,
      logger: this.#logger,
      streamError: (err) => this.#failOnRefusal(err),
      reconnected,
    });
  }

  /** Current state. */
  get state(): WorkerState {
    return this.#state;
  }

  /** Start claiming. Resolves once RUNNING; a second call is a no-op; rejects after `stop()`. */
  async start(): Promise<void> {
    if (this.#state === "RUNNING") return;
    if (this.#state !== "INITIALIZED") throw new Error(`Worker: cannot start when ${this.#state}`);
    this.#state = "RUNNING";
    this.#settler.start();
    this.#heartbeats.start();
    this.#poller.start();
    this.#logger.info({ state: this.#state }, "taskq: worker started");
  }

  /**
   * Start, then resolve when the worker has stopped (after someone calls `stop()`); rejects with the
   * gateway's error if the worker FAILED.
   */
  async run(): Promise<void> {
    await this.start();
    await this.#stopped;
    if (this.#failure) throw this.#failure;
  }

  /**
   * Stop gracefully: poll no more, let running handlers finish until the grace deadline, then abort
   * them (signal reason `shutdown`) and settle them as a retryable `WorkerShutdown` failure to be retried
   * at once; close the streams. Resolves when STOPPED. Idempotent: later calls return the same promise.
   */
  stop(opts: StopOptions = {}): Promise<void> {
    if (this.#state === "INITIALIZED") {
      this.#state = "STOPPED";
      this.#markStopped();
    }
    this.#stopping ??= this.#state === "STOPPED" ? this.#stopped : this.#drain(opts.graceMs ?? this.#graceMs);
    return this.#stopping;
  }

  /** State and counters now. */
  snapshot(): WorkerSnapshot {
    return {
      state: this.#state,
      ...this.#counts,
      buffered: this.#buffer.size,
      lookAhead: this.#lookAhead.size(),
      throttled: { ...this.#throttled },
      failure: this.#failure?.message,
    };
  }

  /**
   * A refusal of the worker's credentials ends it: every poll, settle and heartbeat would be refused
   * the same way, so retrying only hides a wrong or revoked token. Running handlers are aborted
   * (their leases expire and the jobs are retried elsewhere); nothing more is sent.
   */
  #failOnRefusal(err: unknown): void {
    if (!(err instanceof ConnectError)) return;
    if (err.code !== Code.Unauthenticated && err.code !== Code.PermissionDenied) return;
    // A draining worker is stopping anyway: its drain ends at the grace deadline.
    if (this.#failure || this.#state !== "RUNNING") return;
    this.#failure = err;
    this.#logger.error(
      errorFields(err),
      "taskq: the gateway refused this worker's credentials; worker failed",
    );
    this.#stopping = this.#abandon();
  }

  async #abandon(): Promise<void> {
    clearTimeout(this.#bufferCheck);
    this.#poller.abort();
    for (const a of this.#active.values())
      a.abort.abort(new JobAbortError("shutdown", "the gateway refused this worker's credentials"));
    await Promise.all([this.#poller.done, this.#settler.close(Date.now()), this.#heartbeats.stop()]);
    this.#state = "FAILED";
    this.#markStopped();
  }

  async #drain(graceMs: number): Promise<void> {
    this.#state = "DRAINING";
    this.#logger.info({ running: this.#active.size, graceMs }, "taskq: worker draining");
    const deadline = Date.now() + graceMs;
    // The half-close makes the gateway answer an outstanding long poll at once. Waiting for that answer,
    // rather than cancelling the stream, keeps jobs claimed just before the stop from being lost in a
    // reset; a peer that does not answer has its stream cancelled after POLL_ANSWER_ON_DRAIN_MS.
    this.#poller.drain();
    clearTimeout(this.#bufferCheck);
    this.#releaseBuffered(undefined, "worker stopping");
    const cancelPollAt = Date.now() + Math.min(graceMs, POLL_ANSWER_ON_DRAIN_MS);
    while (Date.now() < deadline) {
      if (this.#active.size === 0) {
        if (!this.#poller.polling) break;
        if (Date.now() >= cancelPollAt) {
          this.#poller.abort();
          await this.#poller.done;
          continue;
        }
        await this.#changed.wait(cancelPollAt - Date.now());
        continue;
      }
      await this.#changed.wait(deadline - Date.now());
    }
    this.#poller.abort();
    await this.#poller.done;
    for (const [key, a] of this.#active) {
      if (a.leaseLost) {
        // Nothing to settle; the handler may still run, but its slot is no longer ours to wait on.
        this.#finish(key);
      } else if (!a.settling) {
        a.abort.abort(new JobAbortError("shutdown", "worker shutdown grace period ran out"));
        this.#settle(key, a, {
          case: "failure",
          value: {
            type: "WorkerShutdown",
            message: "worker stopped before the handler finished",
            retryable: true,
            retryAfter: durationFromMs(0),
          },
        });
      }
    }
    await this.#settler.close(Date.now() + SETTLE_FLUSH_MS);
    await this.#heartbeats.stop();
    this.#state = "STOPPED";
    this.#logger.info(this.snapshot() as unknown as Record<string, unknown>, "taskq: worker stopped");
    this.#markStopped();
  }

  /** A claimed job: leased and heartbeated from now, waiting in the buffer until a handler may start. */
  #hold(job: ClaimedJob): void {
    const key = `${job.id}/${job.attempt}`;
    const now = Date.now();
    const deadlineMs = job.leaseDeadlineMs ?? now;
    const a: Active = {
      job,
      started: false,
      abort: new LazyAbort(),
      startedAt: now,
      deadlineMs,
      holdUntil: now + Math.max(0, deadlineMs - now) * HOLD_LEASE_FRACTION,
      settling: false,
      cancelRequested: false,
      leaseLost: false,
      slot: true,
    };
    this.#active.set(key, a);
    this.#buffer.add(key);
    this.#counts.claimed++;
    this.#heartbeats.track(key, job.id, job.attempt, a.deadlineMs);
  }

  /**
   * Starts buffered jobs, oldest claim first, while fewer than `concurrency` handlers run. A draining
   * worker gives back what it cannot start (a poll answered after the stop may bring jobs).
   */
  #startBuffered(): void {
    for (const key of this.#buffer) {
      if (this.#counts.running >= this.#concurrency) break;
      const a = this.#active.get(key);
      this.#buffer.delete(key);
      if (a) this.#run(key, a);
    }
    if (this.#state !== "RUNNING") this.#releaseBuffered(undefined, "worker stopping");
    else this.#watchBuffer();
  }

  /** While an adaptive buffer holds jobs, look every BUFFER_CHECK_MS for jobs to give back. */
  #watchBuffer(): void {
    if (!this.#lookAhead.adaptive || this.#bufferCheck !== undefined || this.#buffer.size === 0) return;
    this.#bufferCheck = setTimeout(() => {
      this.#bufferCheck = undefined;
      if (this.#state !== "RUNNING") return;
      this.#giveBackStale();
      this.#watchBuffer();
    }, BUFFER_CHECK_MS);
    this.#bufferCheck.unref?.();
  }

  /**
   * Gives back what an adaptive buffer should not hold any longer: all of it once no slot has freed
   * for a few poll round trips (the running jobs are long: another worker may have free slots), else
   * the jobs held past their hold limit, a fraction of their lease.
   */
  #giveBackStale(): void {
    const stall = performance.now() - this.#lastStartAt;
    if (this.#counts.running >= this.#concurrency && this.#lookAhead.stalled(stall)) {
      this.#releaseBuffered(undefined, "the running jobs run long");
      return;
    }
    const now = Date.now();
    for (const key of this.#buffer) {
      const a = this.#active.get(key);
      if (!a) continue;
      // Claim order: the first job still within its limit is followed by younger ones.
      if (now < a.holdUntil) break;
      this.#buffer.delete(key);
      this.#settle(key, a, { case: "released", value: { reason: "not started within its hold limit" } });
    }
  }

  /** Gives back unstarted jobs, of one queue or (undefined) all: a Released settlement each. */
  #releaseBuffered(queue: string | undefined, reason: string): void {
    for (const key of this.#buffer) {
      const a = this.#active.get(key);
      if (!a || (queue !== undefined && a.job.queue !== queue)) continue;
      this.#buffer.delete(key);
      this.#settle(key, a, { case: "released", value: { reason } });
    }
  }

  #run(key: string, a: Active): void {
    const { job } = a;
    a.started = true;
    a.startedAt = Date.now();
    const startedAt = performance.now();
    this.#lastStartAt = startedAt;
    this.#counts.running++;
    const ctx = createJobContext(job, a.abort, () => a.deadlineMs);
    // A span only when the application registered an OpenTelemetry tracer (tracing.ts).
    const tracer = activeTracer();
    const span = tracer ? startHandlerSpan(tracer, job) : undefined;
    Promise.resolve()
      .then(span ? () => runInSpan(span, () => this.#handler(ctx)) : () => this.#handler(ctx))
      .then(
        (value): Outcome => ({
          case: "success",
          value: { result: encodePayload(value as PayloadInput | undefined).bytes },
        }),
        (err: unknown): Outcome => {
          this.#logger.warn(
            { queue: job.queue, jobId: job.id, attempt: job.attempt, ...errorFields(err) },
            "taskq: handler failed",
          );
          return { case: "failure", value: failureFromError(err) };
        },
      )
      .then((outcome) => {
        if (span) {
          const kind = a.leaseLost
            ? "lease_lost"
            : a.cancelRequested
              ? "cancelled"
              : (outcome.case ?? "none");
          endHandlerSpan(span, kind, outcome.case === "failure" ? outcome.value.message : undefined);
        }
        this.#counts.running--;
        this.#lookAhead.ran(performance.now() - startedAt);
        this.#startBuffered();
        if (a.settling) return; // settled at the shutdown deadline already
        if (a.leaseLost) return this.#finish(key);
        if (a.cancelRequested)
          return this.#settle(key, a, { case: "cancelled", value: { reason: "cancel requested" } });
        this.#settle(key, a, outcome);
      });
  }

  #settle(key: string, a: Active, outcome: Outcome): void {
    a.settling = true;
    // The slot returns now, so the next claim overlaps with this settle; Slots bounds unanswered ones.
    if (a.slot) {
      a.slot = false;
      this.#slots.toSettling();
    }
    this.#heartbeats.untrack(key);
    this.#settler
      .settle({
        jobId: a.job.id,
        attempt: a.job.attempt,
        outcome,
        // How long the handler ran: none for a job given back unstarted.
        durationMs: a.started ? Date.now() - a.startedAt : 0,
      })
      .then((result) => {
        this.#count(result, outcome.case);
        this.#finish(key);
      });
  }

  #count(result: SettleAnswer | undefined, kind: Outcome["case"]): void {
    if (!result) return;
    switch (result.status) {
      case SettleStatus.ACCEPTED:
        if (kind === "success") this.#counts.succeeded++;
        else if (kind === "failure") this.#counts.failed++;
        else if (kind === "cancelled") this.#counts.cancelled++;
        else if (kind === "released") this.#counts.released++;
        return;
      case SettleStatus.LEASE_LOST:
        this.#counts.leaseLost++;
        this.#counts.settleRefused++;
        return;
      default:
        this.#counts.settleRefused++;
        this.#logger.warn({ jobId: result.jobId, status: result.status }, "taskq: settle refused");
    }
  }

  /** The job no longer holds its slot. */
  #finish(key: string): void {
    const a = this.#active.get(key);
    if (!a) return;
    this.#active.delete(key);
    if (a.slot) this.#slots.release(1);
    else if (a.settling) this.#slots.settled();
    this.#changed.notify();
  }

  #leaseLost(key: string): void {
    const a = this.#active.get(key);
    if (!a || a.settling) return;
    a.leaseLost = true;
    this.#counts.leaseLost++;
    if (this.#buffer.delete(key)) {
      this.#logger.warn({ jobId: a.job.id, attempt: a.job.attempt }, "taskq: lease of a buffered job lost");
      this.#finish(key);
      return;
    }
    this.#logger.warn({ jobId: a.job.id, attempt: a.job.attempt }, "taskq: lease lost; aborting handler");
    a.abort.abort(new JobAbortError("lease_lost", `lease of job ${a.job.id} attempt ${a.job.attempt} lost`));
  }

  #cancelRequested(key: string, deadlineMs: number | undefined): void {
    const a = this.#active.get(key);
    if (!a) return;
    if (deadlineMs !== undefined) a.deadlineMs = deadlineMs;
    if (a.cancelRequested || a.settling) return;
    a.cancelRequested = true;
    // Never started: given back, and the gateway cancels it (a cancel is pending).
    if (this.#buffer.delete(key)) {
      this.#settle(key, a, { case: "released", value: { reason: "cancel requested" } });
      return;
    }
    a.abort.abort(new JobAbortError("cancelled", `job ${a.job.id} was cancelled`));
  }
}

/** A verdict on which a worker gives back the jobs it holds of that queue, unstarted. */
function givesBack(reason: ThrottleReason): boolean {
  return reason === ThrottleReason.PAUSED || reason === ThrottleReason.BREAKER_OPEN;
}

/** Refuse settings the gateway would refuse on every poll, rather than retrying them forever. */
function validate(opts: WorkerOptions, concurrency: number): void {
  const fail = (msg: string): never => {
    throw new TypeError(`Worker: ${msg}`);
  };
  if (opts.queues.length < 1 || opts.queues.length > 64) fail("queues must name 1 to 64 queues");
  if (!Number.isInteger(concurrency) || concurrency < 1)
    fail(`concurrency must be a positive integer, got ${concurrency}`);
  validatePrefetch(opts.prefetch, fail);
  const { maxWaitMs, leaseMs, heartbeatIntervalMs, shutdownGraceMs } = opts;
  if (maxWaitMs !== undefined && !(maxWaitMs >= 0 && maxWaitMs <= 60_000))
    fail("maxWaitMs must be 0 to 60000");
  const { pollBatchWaitMs } = opts;
  if (pollBatchWaitMs !== undefined && !(pollBatchWaitMs >= 0 && pollBatchWaitMs <= 1_000))
    fail("pollBatchWaitMs must be 0 to 1000");
  if (leaseMs !== undefined && !(leaseMs >= 100 && leaseMs <= 3_600_000))
    fail("leaseMs must be 100 to 3600000");
  if (heartbeatIntervalMs !== undefined && !(heartbeatIntervalMs > 0))
    fail("heartbeatIntervalMs must be positive");
  if (shutdownGraceMs !== undefined && !(shutdownGraceMs >= 0)) fail("shutdownGraceMs must be 0 or more");
}

/** `prefetch`: 0 to 10000 jobs, "auto", or { auto: true, max: 0 to 10000 }. */
function validatePrefetch(prefetch: PrefetchOption | undefined, fail: (msg: string) => never): void {
  const isCount = (n: unknown) => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 10_000;
  if (prefetch === undefined || prefetch === "auto" || isCount(prefetch)) return;
  if (typeof prefetch === "object" && prefetch !== null && prefetch.auto === true) {
    if (prefetch.max === undefined || isCount(prefetch.max)) return;
    fail(`prefetch.max must be an integer from 0 to 10000, got ${String(prefetch.max)}`);
  }
  fail(
    `prefetch must be "auto", { auto: true, max: N } or an integer from 0 to 10000, got ${JSON.stringify(prefetch)}`,
  );
}
