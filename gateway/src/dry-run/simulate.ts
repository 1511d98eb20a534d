import { type AdaptiveBounds, AdaptiveLimit, TURN_MS } from "./adaptive-law.js";
import { Gcra } from "./gcra.js";
import { Heap } from "./heap.js";

/** One job of the replay: when it became ready and how long it ran. */
export interface ReplayJob {
  /** When a claim could first take it (ready: enqueued, or its run_at), ms since the epoch. */
  readyMs: number;
  /** How long it ran once started, ms. */
  runMs: number;
  /** Higher first, as claims order them. */
  priority: number;
  flowKey: string | null;
  /** Whether it failed (its last attempt): what an adaptive limit reads beside its run time. */
  failed: boolean;
}

/** What the queue's jobs went through: the figures of the gates that bound starts. */
export interface ReplayLimits {
  /** Fleet-wide cap on running jobs; null: no cap. */
  maxRunning: number | null;
  throttle: { limit: number; periodMs: number } | null;
  claimRate: { ratePerMinute: number; burst: number } | null;
  /** Limits of flow keys (keys not here are unlimited). */
  flowLimits: ReadonlyMap<string, { ratePerMinute: number; burst: number }>;
  /** Most jobs the workers run at once, whatever the limits; null: as many as the limits allow. */
  workers: number | null;
  /** An adaptive max_running (maxRunning is then ignored): moved by the replay's own settles. */
  adaptive: AdaptiveBounds | null;
}

/** The input of a replay, apart from the limits. */
export interface ReplayInput {
  /** In the order claims would see them when equal otherwise: oldest ready first. */
  jobs: readonly ReplayJob[];
  /** When each job already running at the window's start finishes, ms (they hold places of the cap). */
  runningUntilMs: readonly number[];
}

/** One replay's outcome. */
export interface Replay {
  /** Each job's start, ms, by its index in `jobs`. */
  startMs: Float64Array;
  /** Most jobs waiting (ready, not started) at once, and when. */
  peakBacklog: number;
  peakBacklogAtMs: number | null;
}

/**
 * Replays the jobs' arrivals and run times against the limits, as the gates admit claims: the highest
 * priority, then oldest ready job first; a start needs a place under the cap and the workers, a
 * throttle slot and a claim-rate token (gates of the queue: none of its jobs starts without them), and
 * a token of its flow key's limit (a key out of tokens holds back only its own jobs: the next key's
 * job starts instead). A discrete-event model: each step is an arrival, a finish, or the time a
 * bucket admits again. An adaptive cap starts at min and moves at the controller's turns by its law
 * (adaptive-law.ts), from the run times and failures of the jobs as they settle in the replay: run times
 * as recorded, so the replay says what the limit would have made of the latencies and failures the
 * queue saw, not how a downstream would have answered another load. Not modelled: the ramp and the
 * breaker (both change only around a resume or a trip), priority aging, a retried attempt's failure,
 * and the time a worker takes to poll again.
 */
export function replay(input: ReplayInput, limits: ReplayLimits): Replay {
  const { jobs } = input;
  const n = jobs.length;
  const startMs = new Float64Array(n).fill(Number.NaN);
  let t = n > 0 ? (jobs[0] as ReplayJob).readyMs : 0;
  const adaptive = limits.adaptive ? new AdaptiveLimit(limits.adaptive, t) : null;
  let nextTurnAt = t + TURN_MS;
  const workers = limits.workers ?? Number.POSITIVE_INFINITY;
  const cap = () =>
    Math.min(adaptive ? adaptive.limit : (limits.maxRunning ?? Number.POSITIVE_INFINITY), workers);
  const throttle = limits.throttle ? Gcra.throttle(limits.throttle.limit, limits.throttle.periodMs) : null;
  const rate = limits.claimRate
    ? Gcra.perMinute(limits.claimRate.ratePerMinute, limits.claimRate.burst)
    : null;
  const keyBuckets = new Map<string, Gcra>();
  for (const [key, l] of limits.flowLimits) keyBuckets.set(key, Gcra.perMinute(l.ratePerMinute, l.burst));

  // Claims order: priority first, then oldest ready, then the input's order.
  const first = (a: number, b: number) => {
    const ja = jobs[a] as ReplayJob;
    const jb = jobs[b] as ReplayJob;
    if (ja.priority !== jb.priority) return ja.priority > jb.priority;
    if (ja.readyMs !== jb.readyMs) return ja.readyMs < jb.readyMs;
    return a < b;
  };
  // When each running job finishes, and which it is (-1: running at the window's start, run time unknown).
  const running = new Heap<{ until: number; job: number }>((a, b) => a.until < b.until);
  for (const until of input.runningUntilMs) running.push({ until, job: -1 });
  // Waiting jobs per flow key ("" for none), and the keys able to start one, by their best job.
  const waiting = new Map<string, Heap<number>>();
  const heads = new Heap<{ key: string; job: number }>((a, b) => first(a.job, b.job));
  const blocked = new Heap<{ key: string; at: number }>((a, b) => a.at < b.at);
  const isBlocked = new Set<string>();
  let backlog = 0;
  let peakBacklog = 0;
  let peakBacklogAtMs: number | null = null;
  let next = 0;

  /** Ends the runs that finish before `at` (or at it, when `atToo`); an adaptive limit reads their settles. */
  const finishBefore = (at: number, atToo = false) => {
    const done = (until: number) => until < at || (atToo && until === at);
    while (running.size > 0 && done((running.peek() as { until: number }).until)) {
      const { until, job } = running.pop() as { until: number; job: number };
      const j = jobs[job];
      if (j) adaptive?.settle(until, j.runMs, j.failed);
    }
  };

  const offerHead = (key: string) => {
    const job = waiting.get(key)?.peek();
    if (job !== undefined && !isBlocked.has(key)) heads.push({ key, job });
  };

  while (next < n || backlog > 0) {
    for (; next < n && (jobs[next] as ReplayJob).readyMs <= t; next++) {
      const key = (jobs[next] as ReplayJob).flowKey ?? "";
      let queue = waiting.get(key);
      if (!queue) {
        queue = new Heap<number>(first);
        waiting.set(key, queue);
      }
      const before = queue.peek();
      queue.push(next);
      backlog++;
      // A new best job of its key: offered again (the stale entry is skipped when it surfaces).
      if (queue.peek() !== before) offerHead(key);
    }
    // The controller's turns up to now, each after the settles before it (a job finishing at the
    // turn's instant still holds its place then), then the rest of the finishes.
    for (; adaptive && nextTurnAt <= t; nextTurnAt += TURN_MS) {
      finishBefore(nextTurnAt);
      adaptive.turn(nextTurnAt, running.size);
    }
    finishBefore(t, true);
    while (blocked.size > 0 && (blocked.peek() as { at: number }).at <= t) {
      const { key } = blocked.pop() as { key: string };
      isBlocked.delete(key);
      offerHead(key);
    }

    // Start what the gates admit now.
    let queueGateAt = Number.POSITIVE_INFINITY;
    while (heads.size > 0 && running.size < cap()) {
      const gateAt = Math.max(throttle?.nextAt() ?? t, rate?.nextAt() ?? t);
      if (gateAt > t) {
        queueGateAt = gateAt;
        break;
      }
      const { key, job } = heads.pop() as { key: string; job: number };
      const queue = waiting.get(key) as Heap<number>;
      if (queue.peek() !== job || isBlocked.has(key)) continue; // stale
      const bucket = keyBuckets.get(key);
      if (bucket && bucket.nextAt() > t) {
        isBlocked.add(key);
        blocked.push({ key, at: bucket.nextAt() });
        continue;
      }
      queue.pop();
      backlog--;
      startMs[job] = t;
      running.push({ until: t + (jobs[job] as ReplayJob).runMs, job });
      throttle?.take(t);
      rate?.take(t);
      bucket?.take(t);
      offerHead(key);
    }
    if (backlog > peakBacklog) {
      peakBacklog = backlog;
      peakBacklogAtMs = t;
    }

    // The next moment anything can change.
    let at = next < n ? (jobs[next] as ReplayJob).readyMs : Number.POSITIVE_INFINITY;
    // A finish frees a place for the backlog; an adaptive cap also reads it, at the controller's turns.
    if ((backlog > 0 || adaptive) && running.size > 0)
      at = Math.min(at, (running.peek() as { until: number }).until);
    if (adaptive && (backlog > 0 || running.size > 0)) at = Math.min(at, nextTurnAt);
    if (backlog > 0) {
      if (blocked.size > 0) at = Math.min(at, (blocked.peek() as { at: number }).at);
      at = Math.min(at, queueGateAt);
    }
    if (at === Number.POSITIVE_INFINITY) break; // nothing will ever start the rest (no places at all)
    t = Math.max(t, at);
  }
  return { startMs, peakBacklog, peakBacklogAtMs };
}
