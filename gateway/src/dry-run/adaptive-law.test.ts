import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, pgliteDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import { adaptiveStep, intervalMs, unreadMs } from "./adaptive-law.js";

/** The replay's copy of the adaptive law gives the SQL's answers, case by case. */
describe("the adaptive law of a replay against taskq.adaptive_step", () => {
  let db: Db;
  beforeAll(async () => {
    db = await pgliteDb();
    await migrate(db);
  });
  afterAll(() => db.close());

  it("decides as taskq.adaptive_step for every rule, and waits as adaptive_interval and adaptive_unread", async () => {
    const b = { min: 2, max: 50, targetMs: 500 };
    // limit, slow start, settles, failures, avg ms, running
    const cases: [number, boolean, number, number, number, number][] = [
      [10, false, 0, 0, 0, 10],
      [10, false, 40, 0, 120, 10],
      [20, true, 40, 0, 120, 20],
      [14, true, 40, 0, 620, 14],
      [40, false, 40, 0, 510, 40],
      [40, false, 40, 0, 480, 40],
      [40, true, 40, 0, 475, 40],
      [40, false, 40, 0, 5000, 40],
      [40, false, 40, 2, 100, 40],
      [40, false, 40, 1, 100, 40],
      [2, false, 10, 5, 100, 2],
      [3, false, 10, 0, 900, 3],
      [50, false, 10, 0, 100, 50],
      [10, true, 10, 0, 100, 5],
    ];
    for (const [limit, slow, settles, failures, avg, running] of cases) {
      const [sql] = await db.query<{ next_limit: number; slow_start: boolean }>(
        {
          name: "",
          text: "select next_limit, slow_start from taskq.adaptive_step($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        },
        [limit, b.min, b.max, b.targetMs, slow, settles, failures, settles ? avg : null, running, limit],
      );
      const ts = adaptiveStep(limit, b, slow, settles, failures, avg, running);
      expect({ limit: ts.limit, slowStart: ts.slowStart }, JSON.stringify({ limit, slow, settles })).toEqual({
        limit: sql?.next_limit,
        slowStart: sql?.slow_start,
      });
    }
    for (const [target, slow] of [
      [10, true],
      [150, true],
      [500, true],
      [3000, false],
      [3_600_000, true],
    ] as const) {
      const [sql] = await db.query<{ interval_ms: number; unread_ms: number }>(
        {
          name: "",
          text: `select extract(epoch from taskq.adaptive_interval($1, $2)) * 1000 as interval_ms,
                        extract(epoch from taskq.adaptive_unread($1, $2)) * 1000 as unread_ms`,
        },
        [target, slow],
      );
      expect([intervalMs(target, slow), unreadMs(target, slow)]).toEqual([
        Number(sql?.interval_ms),
        Number(sql?.unread_ms),
      ]);
    }
  });
});
