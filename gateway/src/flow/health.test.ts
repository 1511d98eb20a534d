import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, pgliteDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";

/** taskq.queue_health as an operator calls it from psql. */
describe("taskq.queue_health", () => {
  let db: Db;
  const sql = (text: string, params: unknown[] = []) =>
    db.query<Record<string, unknown>>({ name: "", text }, params);
  // As jobs_enqueue does, the first job makes its queue known (taskq.known_queues).
  const enqueue = async (queue: string, ago = "0 seconds") => {
    await sql("select taskq.note_queues($1)", [[queue]]);
    await sql(
      `insert into taskq.jobs (queue, state, payload, max_attempts, run_at, enqueued_at)
       values ($1, 'queued', '\\x', 5, now() - $2::interval, now())`,
      [queue, ago],
    );
  };
  const health = async (queue: string | null) =>
    sql("select queue, verdict, detail from taskq.queue_health($1)", [queue]);

  beforeAll(async () => {
    db = await pgliteDb();
    await migrate(db);
  });
  afterAll(() => db.close());

  it("gives each queue the first verdict that applies, with levels and breaker detail", async () => {
    await sql("select taskq.ensure_queue('quiet', '{}', 'op')");
    await enqueue("fresh");
    await enqueue("old", "2 minutes");
    await enqueue("paused");
    await sql("select taskq.pause_queue('paused', 'op')");
    await enqueue("limited");
    await sql("select taskq.set_queue_throttle('limited', 1, 60000, 'op')");
    await sql("select taskq.ensure_queue('mail', '{}', 'op')"); // a verb refuses a queue never seen
    await sql("select taskq.set_breaker_config('mail', 5, 30, 1, 'op')");
    await sql("select taskq.trip_breaker('mail', 'op')");
    await sql(`select taskq.ensure_queue('warming', '{"ramp_seconds": 60}', 'op')`);
    await sql("select taskq.pause_queue('warming', 'op')");
    await sql("select taskq.resume_queue('warming', 'op')");

    const verdicts = Object.fromEntries((await health(null)).map((r) => [r.queue, r.verdict]));
    expect(verdicts).toEqual({
      fresh: "healthy",
      old: "backlogged",
      paused: "paused",
      limited: "throttled",
      mail: "breaker_open",
      warming: "ramping",
      quiet: "idle",
    });
    const [row] = await health("old");
    expect(row?.detail).toMatchObject({ levels: { queued: 1, scheduled: 0, running: 0 }, breaker: null });
  });

  it("answers which breakers are open now, with their state", async () => {
    const open = await sql(
      "select queue, verdict, detail -> 'breaker' as breaker from taskq.queue_health(null) where verdict = 'breaker_open'",
    );
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ queue: "mail", breaker: { state: "open", opened_total: 1 } });
    const breaker = open[0]?.breaker as { reopens_at?: string } | undefined;
    expect(breaker?.reopens_at).toBeTruthy();
  });
});
