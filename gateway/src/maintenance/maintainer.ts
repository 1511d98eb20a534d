import type { Logger } from "../log.js";
import type { Scheduler } from "../schedule/scheduler.js";
import type { Store } from "../store/store.js";

export interface MaintainerConfig {
  /** Tick period, ms. */
  intervalMs: number;
  /** Finished jobs older than this are hidden, then dropped with their day's partition, seconds. */
  retentionSeconds: number;
  /** Dead rows in the live jobs' table that make the leader vacuum it; 0 leaves it to autovacuum. */
  liveJobsVacuumRows?: number;
  /** Rows per statement, so one backlog never stalls a tick. Default 1000. */
  pageSize?: number;
  /** Pages per task per tick. Default 10. */
  maxPages?: number;
}

export interface TickReport {
  leader: boolean;
  rescued: number;
  promoted: number;
  /** Schedule slots fired. */
  fired: number;
  expired: number;
  /** Finished jobs moved from the live table to the history. */
  moved: number;
  /** Finished jobs past retention deleted one by one (a dropped partition's are not counted). */
  deleted: number;
  /** Whether the tick vacuumed the live jobs' table. */
  vacuumed: boolean;
}

const LEADER_NAME = "maintenance";
/** How often every gateway offers the adaptive controller a turn: the shortest interval between two of a
 * queue's decisions (taskq.adaptive_interval, in slow start), whatever the tick period. */
const ADAPT_EVERY_MS = 250;

/**
 * The maintenance loop: one leader among all gateways (a lease row in Postgres) rescues expired
 * leases, fires due schedule slots, promotes due scheduled jobs, expires TTLs, moves finished jobs
 * left in the live table to the history and drops the history's days past retention. Every gateway,
 * leader or not, also offers the adaptive limits' controller a turn on a loop of its own, every
 * ADAPT_EVERY_MS (taskq.adapt_concurrency decides each queue once per interval, whoever calls), so a
 * leader that stalls does not freeze the limits.
 */
export class Maintainer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private adaptTimer: NodeJS.Timeout | undefined;
  private adapting: Promise<unknown> | undefined;
  private adaptFailing = false;
  private stopped = true;
  private isLeader = false;

  constructor(
    private readonly store: Store,
    private readonly holder: string,
    private readonly config: MaintainerConfig,
    private readonly log: Logger,
    private readonly scheduler?: Scheduler,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
    this.scheduleAdapt(0);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.adaptTimer);
    await Promise.all([this.running, this.adapting]);
    if (this.isLeader) await this.store.leaderRelease(LEADER_NAME, this.holder).catch(() => {});
    this.isLeader = false;
  }

  /** One tick: take or renew leadership, then run every task if we lead. Tests call this directly. */
  async runOnce(now?: Date): Promise<TickReport> {
    const leader = await this.store.leaderAcquire(LEADER_NAME, this.holder, this.config.intervalMs * 5, now);
    if (leader !== this.isLeader)
      this.log.info({ leader }, leader ? "became maintenance leader" : "lost maintenance leadership");
    this.isLeader = leader;
    const report: TickReport = {
      leader,
      rescued: 0,
      promoted: 0,
      fired: 0,
      expired: 0,
      moved: 0,
      deleted: 0,
      vacuumed: false,
    };
    if (!leader) return report;
    const page = this.config.pageSize ?? 1000;
    const ready = new Set<string>();
    report.rescued = await this.pages(async () => {
      const r = await this.store.leasesRescue(page, now);
      for (const q of r.readyQueues) ready.add(q);
      return r.count;
    });
    // Before promotion, so a fired job whose smeared run time is already due is ready this tick.
    if (this.scheduler) report.fired = (await this.scheduler.runOnce(now)).fired;
    report.promoted = await this.pages(async () => {
      const r = await this.store.jobsPromote(page, now);
      for (const q of r.readyQueues) ready.add(q);
      return r.count;
    });
    report.expired = await this.pages(() => this.store.jobsExpireTtl(page, now));
    report.moved = await this.pages(() => this.store.jobsMoveFinished(page));
    report.deleted = await this.store.jobHistoryKeep(page, this.config.retentionSeconds, now);
    const vacuumRows = this.config.liveJobsVacuumRows ?? 0;
    if (vacuumRows > 0) report.vacuumed = await this.store.liveJobsVacuum(vacuumRows);
    await this.pages(() => this.store.breakerSamplesPrune(page, now));
    await this.pages(() => this.store.throttledPrune(page, now));
    await this.store.notifyQueues([...ready]);
    if (report.rescued > 0)
      this.log.info({ rescued: report.rescued }, "re-queued or failed jobs whose lease expired");
    return report;
  }

  private async pages(task: () => Promise<number>): Promise<number> {
    const page = this.config.pageSize ?? 1000;
    let total = 0;
    for (let i = 0; i < (this.config.maxPages ?? 10); i++) {
      const n = await task();
      total += n;
      if (n < page) break;
    }
    return total;
  }

  /**
   * The adaptive controller's turn, on its own loop: a controller that fails must not stop the leader's
   * work. A failure is logged once, not four times a second, until a turn succeeds again.
   */
  private scheduleAdapt(delay: number): void {
    this.adaptTimer = setTimeout(() => {
      this.adapting = this.store
        .adaptConcurrency()
        .then(
          () => {
            if (this.adaptFailing) this.log.info("adaptive concurrency steps work again");
            this.adaptFailing = false;
          },
          (err: unknown) => {
            if (!this.adaptFailing) this.log.warn({ err }, "adaptive concurrency step failed; retrying");
            this.adaptFailing = true;
          },
        )
        .finally(() => {
          if (!this.stopped) this.scheduleAdapt(ADAPT_EVERY_MS);
        });
    }, delay);
  }

  private schedule(delay: number): void {
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .catch((err) => this.log.warn({ err }, "maintenance tick failed; retrying next tick"))
        .finally(() => {
          if (!this.stopped) this.schedule(this.config.intervalMs);
        });
    }, delay);
  }
}
