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
  /** Adaptive limits this instance's call of the controller changed (leader or not). */
  adapted: number;
}

const LEADER_NAME = "maintenance";

/**
 * The maintenance loop: one leader among all gateways (a lease row in Postgres) rescues expired
 * leases, fires due schedule slots, promotes due scheduled jobs, expires TTLs, moves finished jobs
 * left in the live table to the history and drops the history's days past retention. Every gateway,
 * leader or not, also offers the adaptive limits' controller a turn (taskq.adapt_concurrency decides each
 * queue once per interval, whoever calls), so a leader that stalls does not freeze the limits.
 */
export class Maintainer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
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
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
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
      adapted: 0,
    };
    // Its own statement and failure: a controller that fails must not stop the leader's work.
    report.adapted = await this.store.adaptConcurrency(now).catch((err: unknown) => {
      this.log.warn({ err }, "adaptive concurrency step failed; retrying next tick");
      return 0;
    });
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
