import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  type DryRunLimitRequest,
  type DryRunLimitResponse,
  DryRunLimitResponseSchema,
  type DryRunLimitsSchema,
} from "@taskq/sdk/proto";
import { principalOf } from "../auth/interceptor.js";
import type { ReplaySummary } from "../dry-run/compare.js";
import type { DryRunReport, LimitChange } from "../dry-run/dry-run.js";
import type { ReplayLimits } from "../dry-run/simulate.js";
import { guarded, InvalidArgumentError } from "../errors.js";
import * as v from "./validate.js";

/** Runs a dry run for an actor (the store and the clock are the caller's). */
export type DryRunner = (
  change: LimitChange,
  actor: string,
  opts: DryRunOptionsWire,
) => Promise<DryRunReport>;

export interface DryRunOptionsWire {
  windowSeconds?: number | undefined;
  minDelayMs?: number | undefined;
}

/** AdminService.DryRunLimit: the change as its verb's request, checked as that verb's RPC checks it. */
export function dryRunMethods(
  run: DryRunner,
  profileOf: (profile: unknown) => Record<string, unknown>,
): Pick<ServiceImpl<typeof AdminService>, "dryRunLimit"> {
  return {
    dryRunLimit: guarded(async (req: DryRunLimitRequest, ctx: HandlerContext) => {
      const report = await run(changeOf(req, profileOf), principalOf(ctx).actor, {
        windowSeconds: req.windowSeconds,
        minDelayMs: req.minDelayMs,
      });
      return reportMessage(report, req.change.case === "flowLimit" ? req.change.value.flowKey : null);
    }),
  };
}

function changeOf(req: DryRunLimitRequest, profileOf: (p: unknown) => Record<string, unknown>): LimitChange {
  const c = req.change;
  switch (c.case) {
    case "maxRunning":
      return {
        kind: "max_running",
        queue: v.queueName("queue", c.value.queue),
        maxRunning: c.value.maxRunning ?? null,
      };
    case "throttle":
      return {
        kind: "throttle",
        queue: v.queueName("queue", c.value.queue),
        limit: c.value.limit,
        periodMs: c.value.periodMs,
      };
    case "profile":
      return {
        kind: "profile",
        queue: v.queueName("queue", c.value.queue),
        profile: profileOf(c.value.profile),
      };
    case "adaptive":
      return {
        kind: "adaptive",
        queue: v.queueName("queue", c.value.queue),
        min: c.value.min ?? null,
        max: c.value.max ?? null,
        targetLatencyMs: c.value.targetLatencyMs ?? null,
      };
    case "flowLimit":
      v.maxBytes("flow_key", c.value.flowKey, 255);
      return {
        kind: "flow_limit",
        queue: v.queueName("queue", req.queue),
        flowKey: c.value.flowKey,
        ratePerMinute: c.value.ratePerMinute ?? null,
        burst: c.value.burst ?? null,
      };
    default:
      throw new InvalidArgumentError(
        "change",
        "is required: max_running, throttle, profile, flow_limit or adaptive",
      );
  }
}

const UINT32_MAX = 4_294_967_295;
const u32 = (n: number) => Math.min(UINT32_MAX, Math.max(0, Math.round(n)));

/** A report as DryRunLimitResponse; `flowKey` names the key whose limit the replays show. */
export function reportMessage(r: DryRunReport, flowKey: string | null): DryRunLimitResponse {
  return create(DryRunLimitResponseSchema, {
    queue: r.queue,
    windowStart: timestampFromMs(r.fromMs),
    windowEnd: timestampFromMs(r.toMs),
    jobs: r.jobs,
    truncated: r.truncated,
    maxJobs: r.maxJobs,
    workers: r.workers ?? undefined,
    minDelayMs: r.minDelayMs,
    delayed: r.delayed,
    sooner: r.sooner,
    longestExtraWaitMs: u32(r.longestExtraWaitMs),
    current: replayMessage(r.current, r.currentLimits, flowKey),
    proposed: replayMessage(r.proposed, r.proposedLimits, flowKey),
  });
}

function replayMessage(s: ReplaySummary, l: ReplayLimits, flowKey: string | null) {
  return {
    limits: limitsMessage(l, flowKey),
    peakBacklog: s.peakBacklog,
    peakBacklogAt: s.peakBacklogAtMs === null ? undefined : timestampFromMs(s.peakBacklogAtMs),
    meanWaitMs: u32(s.meanWaitMs),
    maxWaitMs: u32(s.maxWaitMs),
    notStartedByEnd: s.notStartedByEnd,
  };
}

function limitsMessage(l: ReplayLimits, flowKey: string | null): MessageInitShape<typeof DryRunLimitsSchema> {
  const flow = flowKey === null ? undefined : l.flowLimits.get(flowKey);
  return {
    maxRunning: l.adaptive ? undefined : (l.maxRunning ?? undefined),
    throttle: l.throttle ? { limit: l.throttle.limit, periodMs: l.throttle.periodMs } : undefined,
    claimRatePerMinute: l.claimRate?.ratePerMinute,
    claimBurst: l.claimRate?.burst,
    flowLimit: flow && flowKey !== null ? { flowKey, ...flow } : undefined,
    adaptive: l.adaptive
      ? { min: l.adaptive.min, max: l.adaptive.max, targetLatencyMs: l.adaptive.targetMs }
      : undefined,
  };
}
