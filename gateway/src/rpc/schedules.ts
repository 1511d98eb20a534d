import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type AdminService, type Schedule, ScheduleSchema, type ScheduleSpec } from "@taskq/sdk/proto";
import { guarded, InvalidArgumentError, NotFoundError } from "../errors.js";
import { CronSchedule, checkTimeZone } from "../schedule/cron.js";
import { nextFiring } from "../schedule/plan.js";
import type { ScheduleSettings, ScheduleStore, ScheduleSpec as StoredSpec } from "../store/schedule-store.js";
import * as v from "./validate.js";

export interface ScheduleDeps {
  schedules: ScheduleStore;
  maxPayloadBytes: number;
  /** Who is acting, for the audit log (from the call's credentials). */
  actor: (ctx: HandlerContext) => string;
}

type ScheduleMethods = Pick<
  ServiceImpl<typeof AdminService>,
  | "redriveFailed"
  | "createSchedule"
  | "updateSchedule"
  | "deleteSchedule"
  | "getSchedule"
  | "listSchedules"
  | "pauseSchedule"
  | "resumeSchedule"
  | "setScheduleSmear"
>;

/** The AdminService methods of schedules and redrive: wire <-> ScheduleStore's SQL verbs. */
export function scheduleMethods(d: ScheduleDeps): ScheduleMethods {
  const name = (n: string) => v.queueName("name", n);
  return {
    redriveFailed: guarded(async (req, ctx) => ({
      redriven: BigInt(
        await d.schedules.queueRedriveFailed(
          v.queueName("queue", req.queue),
          req.limit,
          d.actor(ctx),
          req.smearSeconds,
        ),
      ),
    })),
    createSchedule: guarded(async (req, ctx) => {
      const spec = req.schedule;
      if (!spec) throw new InvalidArgumentError("schedule", "is required");
      if (spec.cron === undefined) throw new InvalidArgumentError("schedule.cron", "is required");
      if (spec.queue === undefined) throw new InvalidArgumentError("schedule.queue", "is required");
      const stored = await d.schedules.scheduleCreate(
        name(spec.name),
        toStoredSpec(spec, d.maxPayloadBytes),
        spec.payload ?? new Uint8Array(0),
        d.actor(ctx),
      );
      return { schedule: toSchedule(stored) };
    }),
    updateSchedule: guarded(async (req, ctx) => {
      const spec = req.schedule;
      if (!spec) throw new InvalidArgumentError("schedule", "is required");
      const stored = await d.schedules.scheduleUpdate(
        name(spec.name),
        toStoredSpec(spec, d.maxPayloadBytes),
        spec.payload ?? null,
        d.actor(ctx),
      );
      return { schedule: toSchedule(stored) };
    }),
    deleteSchedule: guarded(async (req, ctx) => ({
      schedule: toSchedule(await d.schedules.scheduleDelete(name(req.name), d.actor(ctx))),
    })),
    getSchedule: guarded(async (req) => {
      const [found] = await d.schedules.schedulesList(name(req.name));
      if (!found) throw new NotFoundError(`schedule ${req.name} not found`);
      return { schedule: toSchedule(found), payload: await d.schedules.schedulePayload(req.name) };
    }),
    listSchedules: guarded(async () => ({
      schedules: (await d.schedules.schedulesList()).map(toSchedule),
    })),
    pauseSchedule: guarded(async (req, ctx) => ({
      schedule: toSchedule(await d.schedules.schedulePause(name(req.name), d.actor(ctx))),
    })),
    resumeSchedule: guarded(async (req, ctx) => ({
      schedule: toSchedule(await d.schedules.scheduleResume(name(req.name), d.actor(ctx))),
    })),
    setScheduleSmear: guarded(async (req, ctx) => ({
      schedule: toSchedule(
        await d.schedules.scheduleSetSmear(name(req.name), req.smearSeconds, d.actor(ctx)),
      ),
    })),
  };
}

/** Validates the fields set and maps them to the SQL spec keys; 0 means "the default" where noted. */
function toStoredSpec(s: ScheduleSpec, maxPayloadBytes: number): StoredSpec {
  const out: StoredSpec = {};
  const at = (f: string) => `schedule.${f}`;
  // A cron parses the same in every zone, so a lone cron change is checked in UTC.
  withField(at(""), () => {
    if (s.timeZone !== undefined) out.time_zone = checkTimeZone(s.timeZone || "UTC");
    if (s.cron !== undefined) out.cron = new CronSchedule(s.cron, "UTC").expression.trim();
  });
  if (s.queue !== undefined) out.queue = v.queueName(at("queue"), s.queue);
  if (s.payload !== undefined) v.maxBytes(at("payload"), s.payload, maxPayloadBytes);
  if (s.contentType !== undefined) {
    v.maxBytes(at("content_type"), s.contentType, 255);
    out.content_type = s.contentType;
  }
  if (s.priority !== undefined) out.priority = v.intRange(at("priority"), s.priority, -32768, 32767);
  if (s.flowKey !== undefined) {
    v.maxBytes(at("flow_key"), s.flowKey, 255);
    out.flow_key = s.flowKey === "" ? null : s.flowKey;
  }
  if (s.headers !== undefined) {
    const headers = Object.entries(s.headers.entries);
    v.count(at("headers"), headers.length, 0, 64);
    for (const [k, val] of headers) v.maxBytes(`${at("headers")}[${k.slice(0, 64)}]`, k + val, 8192);
    out.headers = s.headers.entries;
  }
  if (s.maxAttempts !== undefined) {
    out.max_attempts = s.maxAttempts === 0 ? null : v.intRange(at("max_attempts"), s.maxAttempts, 1, 1000);
  }
  if (s.ttlSeconds !== undefined) {
    out.ttl_seconds = s.ttlSeconds === 0 ? null : v.intRange(at("ttl_seconds"), s.ttlSeconds, 1, 315_360_000);
  }
  if (s.missedPolicy !== undefined) {
    if (s.missedPolicy !== "skip" && s.missedPolicy !== "fire_once") {
      throw new InvalidArgumentError(at("missed_policy"), "must be skip or fire_once");
    }
    out.missed_policy = s.missedPolicy;
  }
  if (s.smearSeconds !== undefined)
    out.smear_seconds = v.intRange(at("smear_seconds"), s.smearSeconds, 0, 86_400);
  return out;
}

/** Runs `fn`, prefixing the field of an InvalidArgumentError it throws (e.g. cron -> schedule.cron). */
function withField(prefix: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof InvalidArgumentError)) throw err;
    throw new InvalidArgumentError(prefix + err.field, err.message.slice(err.field.length + 1));
  }
}

const ms = (iso: string) => timestampFromMs(Date.parse(iso));

export function toSchedule(s: ScheduleSettings): Schedule {
  let next: ReturnType<typeof nextFiring> = null;
  if (!s.paused) {
    try {
      const after = new Date(Math.max(Date.now(), Date.parse(s.last_slot)));
      next = nextFiring(
        { cron: new CronSchedule(s.cron, s.time_zone), smearOffsetMs: s.smear_offset_ms },
        after,
      );
    } catch {
      // A cron stored through psql that the gateway can't parse: it never fires, so no next slot.
    }
  }
  return create(ScheduleSchema, {
    name: s.name,
    cron: s.cron,
    timeZone: s.time_zone,
    queue: s.queue,
    payloadBytes: s.payload_bytes,
    contentType: s.content_type,
    priority: s.priority,
    flowKey: s.flow_key ?? undefined,
    headers: s.headers,
    maxAttempts: s.max_attempts ?? undefined,
    ttlSeconds: s.ttl_seconds ?? undefined,
    missedPolicy: s.missed_policy,
    smearSeconds: s.smear_seconds,
    smearOffsetMs: s.smear_offset_ms,
    paused: s.paused,
    lastSlot: ms(s.last_slot),
    nextSlot: next ? timestampFromMs(next.slot.getTime()) : undefined,
    nextRunAt: next ? timestampFromMs(next.runAt.getTime()) : undefined,
    createdAt: ms(s.created_at),
    updatedAt: ms(s.updated_at),
  });
}
