import type { Db } from "./db.js";

const NOW = {
  name: "taskq_db_clock",
  text: "select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms",
};

/**
 * Postgres's clock as this gateway sees it. Gates that compare the time with a time Postgres stamped
 * (the ramp's start) read it, so a gateway whose own clock is off by minutes still ramps on schedule.
 * The offset is sampled at start and then every `intervalMs`; a failed sample keeps the last offset.
 */
export class DbClock {
  #offsetMs = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly local: () => number = Date.now,
  ) {}

  /** Postgres's time now, ms since the epoch. */
  readonly now = (): number => this.local() + this.#offsetMs;

  /** Measures the offset once: the midpoint of the round trip against Postgres's clock_timestamp(). */
  async sync(): Promise<void> {
    const sent = this.local();
    const [row] = await this.db.query<{ ms: number }>(NOW);
    const received = this.local();
    if (row) this.#offsetMs = row.ms - (sent + received) / 2;
  }

  async start(intervalMs = 30_000): Promise<void> {
    await this.sync();
    this.#timer = setInterval(() => void this.sync().catch(() => {}), intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
