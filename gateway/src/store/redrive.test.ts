import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors.js";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";
import { ScheduleStore } from "./schedule-store.js";
import { Store } from "./store.js";

const job = (queue: string) => newJob(queue, { maxAttempts: 2 });

for (const engine of engines) {
  describe.skipIf(!engine.available())(`redrive_failed on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let store: Store;
    let verbs: ScheduleStore;
    let queues: QueueStore;
    beforeAll(async () => {
      ({ db, close } = await engine.open());
      store = new Store(db);
      verbs = new ScheduleStore(db);
      queues = new QueueStore(db);
    });
    afterAll(() => close());

    /** `n` jobs of `queue` that failed for good (a non-retryable failure on attempt 1). */
    const failed = async (queue: string, n: number) => {
      await store.jobsEnqueue(Array.from({ length: n }, () => job(queue)));
      const claimed = await store.jobsClaim({ queues: [queue], limit: n, leaseMs: 60_000, workerId: "w" });
      await store.jobsSettle(
        claimed.map((c) => ({
          jobId: c.id,
          attempt: c.attempt,
          kind: "failure" as const,
          error: { type: "Boom", message: "down", retryable: false },
          delayMs: null,
        })),
      );
    };
    const jobs = (queue: string) =>
      db.query<{ state: string; attempt: number; max_attempts: number; delay_ms: number }>(
        {
          name: "",
          text: `select state, attempt, max_attempts,
                   (extract(epoch from run_at - now()) * 1000)::float8 as delay_ms
                 from taskq.jobs where queue = $1 and state <> 'failed'`,
        },
        [queue],
      );

    it("redrives 1,000 failed jobs with smear 60: run_at spans [now, now+60s) roughly uniformly; audited", async () => {
      await failed("smear", 1000);
      const t0 = Date.now();
      expect(await verbs.queueRedriveFailed("smear", 1000, "operator:test", 60)).toBe(1000);
      const rows = await jobs("smear");
      const elapsed = Date.now() - t0;
      expect(rows).toHaveLength(1000);
      expect(rows.every((r) => r.state === "scheduled")).toBe(true);
      // Attempts: attempt keeps counting (the fencing token); the budget of 2 is granted again.
      expect(rows.every((r) => r.attempt === 1 && r.max_attempts === 3)).toBe(true);
      const delays = rows.map((r) => r.delay_ms);
      expect(Math.min(...delays)).toBeGreaterThanOrEqual(-elapsed);
      expect(Math.max(...delays)).toBeLessThan(60_000);
      // Six 10-second bins of ~167 each (binomial sd ~12): each well inside [110, 230].
      const bins = [0, 0, 0, 0, 0, 0];
      for (const d of delays) {
        const bin = Math.min(5, Math.max(0, Math.floor(d / 10_000)));
        bins[bin] = (bins[bin] ?? 0) + 1;
      }
      for (const b of bins) {
        expect(b).toBeGreaterThan(110);
        expect(b).toBeLessThan(230);
      }
      const [audit, ...older] = await queues.auditList("smear", 50, null);
      expect(older).toEqual([]);
      expect(audit).toMatchObject({
        event_type: "queue.redrive_failed",
        actor: "operator:test",
        detail: {
          before: { failed: 1000 },
          after: { failed: 0, redriven: 1000, limit: 1000, smear_seconds: 60 },
        },
      });
    });

    it("smear 0 makes them ready now; limit is respected; bad input writes nothing", async () => {
      await failed("now", 30);
      expect(await verbs.queueRedriveFailed("now", 10, "operator:test", 0)).toBe(10);
      const rows = await jobs("now");
      expect(rows).toHaveLength(10);
      expect(rows.every((r) => r.state === "queued" && r.delay_ms <= 0)).toBe(true);
      const claimed = await store.jobsClaim({ queues: ["now"], limit: 50, leaseMs: 1000, workerId: "w" });
      expect(claimed.map((c) => c.attempt)).toEqual(Array(10).fill(2));

      for (const [limit, smear] of [
        [0, 0],
        [100_001, 0],
        [10, -1],
        [10, 86_401],
      ] as const) {
        await expect(verbs.queueRedriveFailed("now", limit, "operator:test", smear)).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
      }
      await expect(verbs.queueRedriveFailed("bad name!", 1, "operator:test", 0)).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      expect(await queues.auditList("now", 50, null)).toHaveLength(1);
      expect(await jobs("now")).toHaveLength(10);
    });
  });
}
