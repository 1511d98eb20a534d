import type { JsonObject } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  BreakerState,
  type QueueSettings,
  QueueSettingsSchema,
  ThrottleSource,
} from "@taskq/sdk/proto";
import { principalOf } from "../auth/interceptor.js";
import { guarded, InvalidArgumentError } from "../errors.js";
import type { Explainer } from "../explain/explain.js";
import type { ConsoleReadStore } from "../store/console-read-store.js";
import type { QueueStore, QueueSettings as StoredSettings } from "../store/queue-store.js";
import type { WorkerStore } from "../store/worker-store.js";
import { consoleReadMethods } from "./console-reads.js";
import { type DryRunner, dryRunMethods } from "./dry-run.js";
import { explainMethods } from "./explain.js";
import { type RetryJobDeps, retryJobMethods } from "./retry-job.js";
import { type ScheduleDeps, scheduleMethods } from "./schedules.js";
import * as v from "./validate.js";
import { workerMethods } from "./workers.js";

export interface AdminDeps extends Omit<ScheduleDeps, "actor"> {
  queues: QueueStore;
  consoleReads: ConsoleReadStore;
  workers: WorkerStore;
  explainer: Explainer;
  /** The job a retry answers with. */
  jobs: RetryJobDeps["jobs"];
  /** DryRunLimit's replays. */
  dryRun: DryRunner;
}

/** Who is acting, for the audit log: the caller's token name. */
const actor = (ctx: HandlerContext) => principalOf(ctx).actor;

/** AdminService: wire <-> the SQL verbs of QueueStore; validation of ranges happens in the verbs. */
export function adminService(d: AdminDeps): ServiceImpl<typeof AdminService> {
  const queue = (name: string) => v.queueName("queue", name);
  const allSettings = async () => (await d.queues.queuesList()).map((q) => settings(q.name, q.settings));
  const oneSettings = async (name: string) => settings(name, await d.queues.queueGet(queue(name)));
  return {
    ...scheduleMethods({ ...d, actor }),
    ...consoleReadMethods(d.consoleReads),
    ...workerMethods(d.workers),
    ...explainMethods(d.explainer),
    ...retryJobMethods({ ...d, actor }),
    ...dryRunMethods(d.dryRun, profileOf),
    ensureQueue: guarded(async (req, ctx) => ({
      queue: settings(
        req.queue,
        await d.queues.queueEnsure(queue(req.queue), profileOf(req.profile), actor(ctx)),
      ),
    })),
    getQueue: guarded(async (req) => ({ queue: await oneSettings(req.queue) })),
    queueFlow: guarded(async (req) => ({
      queues: req.queue === undefined ? await allSettings() : [await oneSettings(req.queue)],
    })),
    listQueues: guarded(async () => ({ queues: await allSettings() })),
    whoAmI: guarded(async (_req, ctx) => {
      const p = principalOf(ctx);
      return { actor: p.actor, roles: [...(p.roles ?? [])], queues: [...(p.queues ?? [])], open: !p.roles };
    }),
    pauseQueue: guarded(async (req, ctx) => ({
      queue: settings(req.queue, await d.queues.queuePause(queue(req.queue), actor(ctx))),
    })),
    resumeQueue: guarded(async (req, ctx) => ({
      queue: settings(req.queue, await d.queues.queueResume(queue(req.queue), actor(ctx))),
    })),
    clearQueue: guarded(async (req, ctx) => ({
      cleared: BigInt(await d.queues.queueClear(queue(req.queue), actor(ctx))),
    })),
    setQueueConcurrency: guarded(async (req, ctx) => ({
      queue: settings(
        req.queue,
        await d.queues.queueSetConcurrency(queue(req.queue), req.maxRunning ?? null, actor(ctx)),
      ),
    })),
    setAdaptiveConcurrency: guarded(async (req, ctx) => ({
      queue: settings(
        req.queue,
        await d.queues.queueSetAdaptive(
          queue(req.queue),
          req.min ?? null,
          req.max ?? null,
          req.targetLatencyMs ?? null,
          actor(ctx),
        ),
      ),
    })),
    listAdaptiveChanges: guarded(async (req) => ({
      changes: (await d.queues.adaptiveChanges(queue(req.queue), req.limit ?? null)).map((c) => ({
        at: timestampFromMs(c.at_ms),
        limitBefore: c.limit_before ?? undefined,
        limitAfter: c.limit_after ?? undefined,
        reason: c.reason,
        figures: c.figures as JsonObject,
      })),
    })),
    setQueueThrottle: guarded(async (req, ctx) => ({
      queue: settings(
        req.queue,
        await d.queues.queueSetThrottle(queue(req.queue), req.limit, req.periodMs, actor(ctx)),
      ),
    })),
    deleteQueueThrottle: guarded(async (req, ctx) => ({
      queue: settings(req.queue, await d.queues.queueDeleteThrottle(queue(req.queue), actor(ctx))),
    })),
    setFlowLimit: guarded(async (req, ctx) => {
      v.maxBytes("flow_key", req.flowKey, 255);
      const limit = await d.queues.flowLimitSet(
        req.flowKey,
        req.ratePerMinute ?? null,
        req.burst ?? null,
        actor(ctx),
      );
      return {
        limit: limit
          ? { flowKey: req.flowKey, ratePerMinute: limit.rate_per_minute, burst: limit.burst }
          : undefined,
      };
    }),
    listFlowLimits: guarded(async () => ({ limits: await d.queues.flowLimitsList() })),
    setPriorityAging: guarded(async (req, ctx) => ({
      queue: settings(
        req.queue,
        await d.queues.queueSetAging(queue(req.queue), req.agingSeconds ?? null, actor(ctx)),
      ),
    })),
    setBreakerConfig: guarded(async (req, ctx) => ({
      queue: settings(
        req.queue,
        await d.queues.breakerConfig(
          queue(req.queue),
          req.failureThreshold ?? null,
          req.cooldownSeconds ?? null,
          req.halfOpenSuccesses ?? null,
          actor(ctx),
        ),
      ),
    })),
    setBreakerRate: guarded(async (req, ctx) => ({
      queue: settings(
        req.queue,
        await d.queues.breakerRate(
          queue(req.queue),
          req.failureRatio ?? null,
          req.windowSeconds ?? null,
          req.minVolume ?? null,
          actor(ctx),
        ),
      ),
    })),
    setBreakerLatency: guarded(async (req, ctx) => ({
      queue: settings(
        req.queue,
        await d.queues.breakerLatency(
          queue(req.queue),
          req.thresholdMs ?? null,
          req.windowSeconds ?? null,
          req.minVolume ?? null,
          actor(ctx),
        ),
      ),
    })),
    tripBreaker: guarded(async (req, ctx) => ({
      queue: settings(req.queue, await d.queues.breakerTrip(queue(req.queue), actor(ctx))),
    })),
    closeBreaker: guarded(async (req, ctx) => ({
      queue: settings(req.queue, await d.queues.breakerClose(queue(req.queue), actor(ctx))),
    })),
    listQueueAudit: guarded(async (req) => {
      // Flow-limit changes are logged under "flow:<key>", schedule changes under "schedule:<name>".
      if (req.queue.startsWith("flow:")) v.maxBytes("queue", req.queue.slice(5), 255);
      else if (req.queue.startsWith("schedule:")) v.queueName("queue", req.queue.slice(9));
      else queue(req.queue);
      if (req.beforeId !== undefined && req.beforeId > INT64_MAX) {
        throw new InvalidArgumentError("before_id", `must be at most ${INT64_MAX}`);
      }
      const rows = await d.queues.auditList(req.queue, req.limit ?? null, req.beforeId ?? null);
      return {
        entries: rows.map((r) => ({
          id: BigInt(r.id),
          eventType: r.event_type,
          actor: r.actor,
          detail: r.detail as JsonObject,
          createdAt: timestampFromMs(r.created_ms),
        })),
      };
    }),
    pruneQueueAudit: guarded(async (req) => ({
      removed: await d.queues.auditPrune(req.olderThanHours),
    })),
    queueHealth: guarded(async (req) => ({
      rows: (await d.queues.queueHealth(req.queue === undefined ? null : queue(req.queue))).map((r) => ({
        queue: r.queue,
        verdict: r.verdict,
        detail: r.detail as JsonObject,
      })),
    })),
    queueCounters: guarded(async (req) => ({
      rows: (await d.queues.queueCounters(req.queue === undefined ? null : queue(req.queue))).map((r) => ({
        queue: r.queue,
        queued: BigInt(r.queued),
        scheduled: BigInt(r.scheduled),
        running: BigInt(r.running),
        succeededLastMinute: BigInt(r.succeeded_last_minute),
        failedLastMinute: BigInt(r.failed_last_minute),
        succeededLastHour: BigInt(r.succeeded_last_hour),
        failedLastHour: BigInt(r.failed_last_hour),
        oldestReadySeconds: r.oldest_ready_seconds ?? undefined,
        throttledLastHour: Object.fromEntries(
          Object.entries(r.throttled_last_hour).map(([reason, n]) => [reason, BigInt(n)]),
        ),
      })),
    })),
  };
}

const INT64_MAX = 9_223_372_036_854_775_807n;

/** EnsureQueueRequest.profile as ensure_queue takes it. */
function profileOf(struct: unknown): JsonObject {
  const profile = (struct ?? {}) as JsonObject;
  // JSON would turn NaN into null (a setting switched off) and Postgres cannot cast 1e20: refuse both.
  for (const [k, v] of Object.entries(profile))
    if (typeof v === "number" && (!Number.isFinite(v) || Math.abs(v) > Number.MAX_SAFE_INTEGER))
      throw new InvalidArgumentError(`profile.${k}`, `must be a whole number in its range (got ${v})`);
  return profile;
}

const breakerStates = {
  closed: BreakerState.CLOSED,
  open: BreakerState.OPEN,
  half_open: BreakerState.HALF_OPEN,
} as const;

export function settings(name: string, s: StoredSettings): QueueSettings {
  return create(QueueSettingsSchema, {
    name,
    paused: s.paused,
    maxRunning: s.max_running ?? undefined,
    throttle: s.throttle
      ? {
          limit: s.throttle.limit,
          periodMs: s.throttle.period_ms,
          source: s.throttle.source === "config" ? ThrottleSource.CONFIG : ThrottleSource.CONSOLE,
        }
      : undefined,
    claimRatePerMinute: s.claim_rate_per_minute ?? undefined,
    claimBurst: s.claim_burst ?? undefined,
    rampSeconds: s.ramp_seconds ?? undefined,
    rampStartedAt: s.ramp_started_at ? timestampFromMs(Date.parse(s.ramp_started_at)) : undefined,
    priorityAgingSeconds: s.priority_aging_seconds ?? undefined,
    defaultTtlSeconds: s.default_ttl_seconds ?? undefined,
    notifyMode: s.notify_mode,
    breaker: s.breaker
      ? {
          failureThreshold: s.breaker.failure_threshold,
          cooldownSeconds: s.breaker.cooldown_seconds,
          halfOpenSuccesses: s.breaker.half_open_successes,
          rate: s.breaker.rate
            ? {
                failureRatio: s.breaker.rate.failure_ratio,
                windowSeconds: s.breaker.rate.window_seconds,
                minVolume: s.breaker.rate.min_volume,
              }
            : undefined,
          latency: s.breaker.latency
            ? {
                thresholdMs: s.breaker.latency.threshold_ms,
                windowSeconds: s.breaker.latency.window_seconds,
                minVolume: s.breaker.latency.min_volume,
              }
            : undefined,
          state: breakerStates[s.breaker.state],
          failureStreak: s.breaker.failure_streak,
          openedTotal: s.breaker.opened_total,
          trippedAt: s.breaker.tripped_at ? timestampFromMs(Date.parse(s.breaker.tripped_at)) : undefined,
          probeJobId: s.breaker.probe_job_id ?? undefined,
          probeSuccesses: s.breaker.probe_successes,
        }
      : undefined,
    adaptive: s.adaptive
      ? {
          min: s.adaptive.min,
          max: s.adaptive.max,
          targetLatencyMs: s.adaptive.target_latency_ms,
          fixedMaxRunning: s.adaptive.fixed_max_running ?? undefined,
          slowStart: s.adaptive.slow_start,
          decidedAt: s.adaptive.decided_at ? timestampFromMs(Date.parse(s.adaptive.decided_at)) : undefined,
          reason: s.adaptive.reason ?? "",
        }
      : undefined,
  });
}
