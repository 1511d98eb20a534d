import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors.js";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";
import { ConsoleReadStore } from "./console-read-store.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";
import { Store } from "./store.js";

const job = (queue: string, payload = new Uint8Array(0)) => newJob(queue, { payload, maxAttempts: 1 });

for (const engine of engines) {
  describe.skipIf(!engine.available())(`the console's reads on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let store: Store;
    let queues: QueueStore;
    let reads: ConsoleReadStore;
    beforeAll(async () => {
      ({ db, close } = await engine.open());
      store = new Store(db);
      queues = new QueueStore(db);
      reads = new ConsoleReadStore(db);
    });
    afterAll(() => close());

    /** Claims up to `n` jobs of `queue` (through pause, breaker and max_running) and settles each as `kind`. */
    const run = async (queue: string, n: number, kind: "success" | "failure") => {
      const claimed = await store.jobsClaim({ limit: n, leaseMs: 60_000, workerId: "w", queues: [queue] });
      await store.jobsSettle(
        claimed.map((c) =>
          kind === "success"
            ? { jobId: c.id, attempt: c.attempt, kind, result: new Uint8Array(0) }
            : {
                jobId: c.id,
                attempt: c.attempt,
                kind,
                error: { type: "Boom", message: "down", retryable: false },
                delayMs: null,
              },
        ),
      );
      return claimed.map((c) => c.id);
    };

    it("list_jobs: one state or every state (null), newest first, paged by before_id, with the total; fields are checked", async () => {
      await store.jobsEnqueue(Array.from({ length: 5 }, () => job("listed", new Uint8Array(3))));
      const failedIds = await run("listed", 2, "failure");
      const queued = await reads.jobsList("listed", "queued", null, null);
      expect(queued.map((j) => j.state)).toEqual(["queued", "queued", "queued"]);
      expect(queued.map((j) => BigInt(j.id))).toEqual(
        queued.map((j) => BigInt(j.id)).sort((a, b) => (a > b ? -1 : 1)),
      );
      expect(queued[0]).toMatchObject({ payload_bytes: 3, attempt: 0, max_attempts: 1, finished_ms: null });
      expect(await reads.jobsCount("listed", "queued")).toBe(3n);

      const page1 = await reads.jobsList("listed", "queued", 2, null);
      const page2 = await reads.jobsList("listed", "queued", 2, BigInt(page1.at(-1)?.id ?? 0));
      expect([...page1, ...page2].map((j) => j.id)).toEqual(queued.map((j) => j.id));

      // null: every state, newest first, with the same total as the states added up.
      const every = await reads.jobsList("listed", null, null, null);
      expect(every.map((j) => j.id)).toEqual(
        [...queued, ...failedIds.map((id) => ({ id }))]
          .map((j) => j.id)
          .sort((a, b) => Number(b) - Number(a)),
      );
      expect(await reads.jobsCount("listed", null)).toBe(BigInt(every.length));

      const failed = await reads.jobsList("listed", "failed", null, null);
      expect(failed.map((j) => j.id)).toEqual([...failedIds].reverse());
      expect(failed[0]).toMatchObject({
        attempt: 1,
        outcome: "failed",
        last_error: { type: "Boom", message: "down", retryable: false },
      });
      expect(failed[0]?.finished_ms).toBeGreaterThan(0);

      await expect(reads.jobsList("listed", "lost" as never, null, null)).rejects.toThrow(
        new InvalidArgumentError(
          "state",
          "must be scheduled, queued, running, succeeded, failed or cancelled (or null for every state)",
        ),
      );
      await expect(reads.jobsList("listed", "queued", 1001, null)).rejects.toThrow(
        /^limit must be from 1 to 1000/,
      );
      await expect(reads.jobsList("", "queued", null, null)).rejects.toBeInstanceOf(InvalidArgumentError);
    });

    it("breaker events: opened, half-open (recorded on the probe's claim), closed, and manual trips", async () => {
      await store.jobsEnqueue([job("fragile")]);
      await queues.breakerConfig("fragile", 1, 1, 1, "ops");
      const [tripper] = await run("fragile", 1, "failure");
      await new Promise((r) => setTimeout(r, 1100)); // the 1 s cooldown
      await store.jobsEnqueue([job("fragile")]);
      const [probe] = await run("fragile", 1, "success");
      expect(probe).toBeDefined();
      await queues.breakerTrip("fragile", "ops-alice");

      const events = await reads.breakerEvents("fragile", null);
      expect(events.map((e) => [e.event_type, e.job_id, e.actor])).toEqual([
        ["queue.trip_breaker", null, "ops-alice"],
        ["breaker_closed", probe, null],
        ["breaker_half_open", probe, null],
        ["breaker_opened", tripper, null],
      ]);
      expect(events[3]?.data).toEqual({ trigger: "streak", failure_streak: 1, failure_threshold: 1 });
      expect((await reads.breakerEvents("fragile", 2)).map((e) => e.event_type)).toEqual([
        "queue.trip_breaker",
        "breaker_closed",
      ]);
      expect((await reads.jobEvents(probe as string)).map((e) => e.event_type)).toEqual([
        "breaker_half_open",
        "breaker_closed",
      ]);
      expect(await reads.jobEvents("999999999")).toEqual([]);
      await expect(reads.breakerEvents("fragile", 201)).rejects.toThrow(/^limit must be from 1 to 200/);
    });

    it("queue_activity: a row per minute, claims and finishes counted in the current one", async () => {
      await store.jobsEnqueue(Array.from({ length: 4 }, () => job("busy")));
      await run("busy", 3, "success");
      await run("busy", 1, "failure");
      await queues.throttledAdd([{ queue: "busy", reason: "THROTTLE", count: 7 }]);
      const minutes = await reads.queueActivity("busy", 5);
      expect(minutes).toHaveLength(5);
      expect(minutes.slice(0, 4).every((m) => m.claimed === "0" && m.succeeded === "0")).toBe(true);
      const now = minutes.at(-1);
      expect(now).toMatchObject({ claimed: "4", succeeded: "3", failed: "1", cancelled: "0" });
      expect(now?.throttled).toEqual({ THROTTLE: 7 });
      expect(now?.avg_run_ms).toBeGreaterThanOrEqual(0);
      expect(now?.max_run_ms).toBeGreaterThanOrEqual(now?.avg_run_ms ?? 0);
      expect(minutes[0]?.avg_run_ms).toBeNull();
      expect(await reads.queueActivity("busy", null)).toHaveLength(15);
      await expect(reads.queueActivity("busy", 61)).rejects.toThrow(/^minutes must be from 1 to 60/);
    });

    it("psql roles: operators and observers run the reads, housekeepers do not, nobody reads job_events", async () => {
      const as = (role: string, text: string) =>
        db
          .transaction(async (tx) => {
            await tx.query({ name: "", text: `set local role ${role}` });
            return tx.query({ name: "", text });
          })
          .then(
            () => "allowed",
            (err: { code?: string }) => err.code,
          );
      const reads = [
        "select * from taskq.list_jobs('busy', 'failed')",
        "select taskq.count_jobs('busy', 'failed')",
        "select * from taskq.list_job_events(1)",
        "select * from taskq.list_breaker_events('fragile')",
        "select * from taskq.queue_activity('busy')",
      ];
      for (const text of reads) {
        expect(await as("taskq_operator", text), text).toBe("allowed");
        expect(await as("taskq_observer", text), text).toBe("allowed");
        expect(await as("taskq_housekeeper", text), text).toBe("42501");
      }
      expect(await as("taskq_observer", "select * from taskq.job_events")).toBe("42501");
    });
  });
}
