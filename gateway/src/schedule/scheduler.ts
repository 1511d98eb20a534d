import type { Logger } from "../log.js";
import type { ActiveSchedule, ScheduleStore } from "../store/schedule-store.js";
import { CronSchedule } from "./cron.js";
import { planFirings } from "./plan.js";

export interface SchedulerConfig {
  /** Slots older than this when the leader looks are missed (see missed_policy), ms. Default 60000. */
  graceMs?: number;
  /** Most slots of one schedule fired per tick. Default 100. */
  maxFiringsPerTick?: number;
  /** max_attempts of fired jobs whose schedule sets none. */
  defaultMaxAttempts: number;
}

export interface SchedulerReport {
  fired: number;
  skipped: number;
}

/**
 * Fires due schedule slots; the maintenance leader calls runOnce every tick. Safe with any number of
 * callers: taskq.fire_schedule claims each slot once (unique (schedule, slot), and slot > last_slot).
 */
export class Scheduler {
  // Parsed crons by expression and zone; a schedule psql stored with a cron we can't parse is an Error.
  private readonly parsed = new Map<string, CronSchedule | Error>();
  private readonly warned = new Set<string>();

  constructor(
    private readonly store: ScheduleStore,
    private readonly config: SchedulerConfig,
    private readonly log: Logger,
  ) {}

  /** One pass over every active schedule at `now` (default: the database's clock). */
  async runOnce(now?: Date): Promise<SchedulerReport> {
    const schedules = await this.store.schedulesActive();
    const report: SchedulerReport = { fired: 0, skipped: 0 };
    await this.store.scheduleFiresPrune(1000, now);
    if (schedules.length === 0) return report;
    const at = now ?? (await this.store.dbNow());
    for (const s of schedules) {
      const cron = this.cron(s);
      if (!cron) continue;
      const plan = planFirings(
        {
          cron,
          smearOffsetMs: s.smear_offset_ms,
          missedPolicy: s.missed_policy,
          lastSlot: s.last_slot,
        },
        at,
        { graceMs: this.config.graceMs ?? 60_000, maxFirings: this.config.maxFiringsPerTick ?? 100 },
      );
      for (const f of plan.fire) {
        const job = await this.store.scheduleFire(
          { scheduleId: s.id, ...f, defaultMaxAttempts: this.config.defaultMaxAttempts },
          now,
        );
        if (job !== null) report.fired++;
      }
      if (plan.skipTo) {
        await this.store.scheduleSkip(s.id, plan.skipTo);
        report.skipped++;
        this.log.info({ schedule: s.name, upTo: plan.skipTo }, "skipped missed schedule slots");
      }
    }
    return report;
  }

  private cron(s: ActiveSchedule): CronSchedule | null {
    const key = `${s.cron}\u0000${s.time_zone}`;
    let c = this.parsed.get(key);
    if (c === undefined) {
      try {
        c = new CronSchedule(s.cron, s.time_zone);
      } catch (err) {
        c = err as Error;
      }
      this.parsed.set(key, c);
    }
    if (!(c instanceof Error)) return c;
    if (!this.warned.has(key)) {
      this.warned.add(key);
      this.log.warn({ schedule: s.name, err: c.message }, "schedule's cron can't be parsed; it never fires");
    }
    return null;
  }
}
