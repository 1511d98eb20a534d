import { AlreadyExistsError, NotFoundError } from "../errors.js";
import type { Db } from "./db.js";
import { loadQueries } from "./queries.js";
import { fromDbError } from "./queue-store.js";

const q = loadQueries("schedules.sql", [
  "ScheduleCreate",
  "ScheduleUpdate",
  "ScheduleDelete",
  "SchedulePause",
  "ScheduleResume",
  "ScheduleSetSmear",
  "SchedulesList",
  "SchedulePayload",
  "SchedulesActive",
  "ScheduleFire",
  "ScheduleSkip",
  "ScheduleFiresPrune",
  "QueueRedriveFailed",
  "JobRetry",
  "DbNow",
] as const);

/** Spec keys of taskq.create_schedule / update_schedule (snake_case, as SQL takes them). */
export interface ScheduleSpec {
  cron?: string;
  time_zone?: string;
  queue?: string;
  content_type?: string;
  priority?: number;
  flow_key?: string | null;
  headers?: Record<string, string>;
  max_attempts?: number | null;
  ttl_seconds?: number | null;
  missed_policy?: "skip" | "fire_once";
  smear_seconds?: number;
}

/** A schedule as the SQL verbs return it (taskq.schedule_settings). */
export interface ScheduleSettings {
  name: string;
  cron: string;
  time_zone: string;
  queue: string;
  payload_bytes: number;
  content_type: string;
  priority: number;
  flow_key: string | null;
  headers: Record<string, string>;
  max_attempts: number | null;
  ttl_seconds: number | null;
  missed_policy: "skip" | "fire_once";
  smear_seconds: number;
  smear_offset_ms: number;
  paused: boolean;
  last_slot: string;
  created_at: string;
  updated_at: string;
}

/** A schedule the scheduler plans (not paused). */
export interface ActiveSchedule {
  id: string;
  name: string;
  cron: string;
  time_zone: string;
  smear_offset_ms: number;
  missed_policy: "skip" | "fire_once";
  last_slot: Date;
}

/**
 * Schedules (operator verbs and the leader's firing) and the redrive verb. Each verb is one SQL
 * function call: validation, change and audit row in one transaction.
 */
export class ScheduleStore {
  constructor(private readonly db: Db) {}

  scheduleCreate(
    name: string,
    spec: ScheduleSpec,
    payload: Uint8Array,
    actor: string,
  ): Promise<ScheduleSettings> {
    return this.settings(q.ScheduleCreate, [name, JSON.stringify(spec), payload, actor]);
  }

  /** Sets the spec keys given; a null payload keeps the payload. */
  scheduleUpdate(
    name: string,
    spec: ScheduleSpec,
    payload: Uint8Array | null,
    actor: string,
  ): Promise<ScheduleSettings> {
    return this.settings(q.ScheduleUpdate, [name, JSON.stringify(spec), payload, actor]);
  }

  scheduleDelete(name: string, actor: string): Promise<ScheduleSettings> {
    return this.settings(q.ScheduleDelete, [name, actor]);
  }

  schedulePause(name: string, actor: string): Promise<ScheduleSettings> {
    return this.settings(q.SchedulePause, [name, actor]);
  }

  scheduleResume(name: string, actor: string): Promise<ScheduleSettings> {
    return this.settings(q.ScheduleResume, [name, actor]);
  }

  scheduleSetSmear(name: string, smearSeconds: number, actor: string): Promise<ScheduleSettings> {
    return this.settings(q.ScheduleSetSmear, [name, smearSeconds, actor]);
  }

  /** Every schedule by name, or the one named. */
  async schedulesList(name: string | null = null): Promise<ScheduleSettings[]> {
    const rows = await this.call<{ settings: ScheduleSettings }>(q.SchedulesList, [name]);
    return rows.map((r) => r.settings);
  }

  async schedulePayload(name: string): Promise<Uint8Array> {
    const [row] = await this.db.query<{ payload: Uint8Array }>(q.SchedulePayload, [name]);
    return row ? new Uint8Array(row.payload) : new Uint8Array(0);
  }

  async schedulesActive(): Promise<ActiveSchedule[]> {
    const rows = await this.db.query<ActiveSchedule & { last_slot: Date | string }>(q.SchedulesActive);
    return rows.map((r) => ({ ...r, last_slot: new Date(r.last_slot) }));
  }

  /** Fires one slot; the job id, or null when that slot already fired (or the schedule changed). */
  async scheduleFire(
    p: { scheduleId: string; slot: Date; runAt: Date; defaultMaxAttempts: number },
    now?: Date | null,
  ): Promise<string | null> {
    const [row] = await this.db.query<{ job_id: string | null }>(q.ScheduleFire, [
      p.scheduleId,
      p.slot,
      p.runAt,
      p.defaultMaxAttempts,
      now ?? null,
    ]);
    return row?.job_id ?? null;
  }

  /** The database's clock. */
  async dbNow(): Promise<Date> {
    const [row] = await this.db.query<{ now: Date | string }>(q.DbNow);
    return new Date(row?.now ?? Date.now());
  }

  /** Marks the schedule's slots up to `upTo` done without firing them. */
  async scheduleSkip(scheduleId: string, upTo: Date): Promise<void> {
    await this.db.query(q.ScheduleSkip, [scheduleId, upTo]);
  }

  async scheduleFiresPrune(limit: number, now?: Date | null): Promise<number> {
    return (await this.db.query(q.ScheduleFiresPrune, [limit, now ?? null])).length;
  }

  /** redrive_failed: up to `limit` failed jobs back, run_at spread over [now, now+smear); how many. */
  async queueRedriveFailed(
    queue: string,
    limit: number,
    actor: string,
    smearSeconds: number,
  ): Promise<number> {
    const [row] = await this.call<{ redriven: string }>(q.QueueRedriveFailed, [
      queue,
      limit,
      actor,
      smearSeconds,
    ]);
    return Number(row?.redriven ?? 0);
  }

  /** retry_job: one failed job ready again now, its attempt budget granted again; its queue. */
  async jobRetry(jobId: string, actor: string): Promise<string> {
    const [row] = await this.call<{ queue: string }>(q.JobRetry, [jobId, actor]);
    if (!row) throw new Error("verb returned nothing");
    return row.queue;
  }

  private async settings(sql: (typeof q)[keyof typeof q], params: unknown[]): Promise<ScheduleSettings> {
    const [row] = await this.call<{ settings: ScheduleSettings }>(sql, params);
    if (!row) throw new Error("verb returned nothing");
    return row.settings;
  }

  private async call<R extends object>(sql: (typeof q)[keyof typeof q], params: unknown[]): Promise<R[]> {
    try {
      return await this.db.query<R>(sql, params);
    } catch (err) {
      const e = err as { code?: string; message?: string };
      if (e?.code === "P0002" && e.message) throw new NotFoundError(e.message);
      if (e?.code === "23505" && e.message?.startsWith("schedule ")) throw new AlreadyExistsError(e.message);
      throw fromDbError(err);
    }
  }
}
