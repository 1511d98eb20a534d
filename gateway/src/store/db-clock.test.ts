import { describe, expect, it } from "vitest";
import { pgliteDb } from "./db.js";
import { DbClock } from "./db-clock.js";

describe("DbClock", () => {
  it("reads Postgres's time even when this process's clock is minutes off", async () => {
    const db = await pgliteDb();
    try {
      // This gateway's clock runs 3 minutes ahead; the database's (the machine's) does not.
      const clock = new DbClock(db, () => Date.now() + 180_000);
      expect(clock.now() - Date.now()).toBeGreaterThan(170_000);
      await clock.sync();
      expect(Math.abs(clock.now() - Date.now())).toBeLessThan(1000);
    } finally {
      await db.close();
    }
  });
});
