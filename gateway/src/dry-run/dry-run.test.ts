import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from "../errors.js";
import type { Db } from "../store/db.js";
import { QueueStore } from "../store/queue-store.js";
import { engines, knownQueues } from "../testing/services.js";
import { dryRun, type LimitChange } from "./dry-run.js";
import { readHistory } from "./history.js";

const ACTOR = "operator:test";
// A fixed "now" a little in the past, so every row below sits within retention.
const NOW = Math.floor(Date.now() / 1000) * 1000 - 600_000;
const HOUR = 3_600_000;

interface Row {
  state: "queued" | "running" | "succeeded" | "failed" | "cancelled";
  readyMs: number;
  startedMs?: number;
  finishedMs?: number;
  flowKey?: string;
}

for (const engine of engines) {
  describe.skipIf(!engine.available())(`dry run of a limit change, on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let queues: QueueStore;
    let n = 0;
    const queue = () => `dry-${++n}`;
    const sql = <T extends object = Record<string, unknown>>(text: string, values: unknown[] = []) =>
      db.query<T>({ name: "", text }, values);
    const ts = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
    /** Writes jobs as their claims and settles would have left them. */
    const record = async (q: string, rows: Row[]) => {
      // As an enqueue does: the queue is known from its first job.
      await sql("select taskq.note_queues($1::text[])", [[q]]);
      for (const r of rows) {
        // Through taskq.jobs: it puts a finished job in the history, a live one in live_jobs.
        await sql(
          `insert into taskq.jobs (queue, state, payload, max_attempts, attempt, run_at, enqueued_at,
             started_at, finished_at, flow_key)
           values ($1, $2, '', 5, $3, $4, $4, $5, $6, $7)`,
          [
            q,
            r.state,
            r.startedMs === undefined ? 0 : 1,
            ts(r.readyMs),
            ts(r.startedMs),
            ts(r.finishedMs),
            r.flowKey ?? null,
          ],
        );
      }
    };
    /** Everything a dry run must leave alone. */
    const snapshot = async (q: string) => ({
      settings: await sql("select * from taskq.queues where name = $1", [q]),
      audit: await sql("select count(*)::int as n from taskq.queue_audit"),
      flowLimits: await sql("select * from taskq.flow_limits order by flow_key"),
    });
    const run = (change: LimitChange, opts = {}) =>
      dryRun({ db, queues, now: async () => NOW }, change, ACTOR, opts);

    beforeAll(async () => {
      ({ db, close } = await engine.open());
      queues = new QueueStore(db);
    });
    afterAll(() => close());

    it("reads the window's jobs: ready in it, waiting or running at its start, still queued or running now", async () => {
      const q = queue();
      const from = NOW - HOUR;
      await record(q, [
        { state: "succeeded", readyMs: from - 5000, startedMs: from - 4000, finishedMs: from - 3000 }, // before
        { state: "succeeded", readyMs: from - 5000, startedMs: from - 1000, finishedMs: from + 2000 }, // running at start
        { state: "succeeded", readyMs: from - 5000, startedMs: from + 1000, finishedMs: from + 1500 }, // waiting at start
        {
          state: "failed",
          readyMs: from + 10_000,
          startedMs: from + 10_000,
          finishedMs: from + 10_300,
          flowKey: "k",
        },
        { state: "cancelled", readyMs: from + 20_000, finishedMs: from + 25_000 }, // never ran
        { state: "running", readyMs: NOW - 3000, startedMs: NOW - 2000 },
        { state: "queued", readyMs: NOW - 1000 },
      ]);
      await record(queue(), [
        { state: "succeeded", readyMs: from + 1, startedMs: from + 1, finishedMs: from + 9 },
      ]);
      const h = await readHistory(db, { queue: q, fromMs: from, toMs: NOW });
      expect(h.truncated).toBe(false);
      expect(h.input.runningUntilMs).toEqual([from + 2000]);
      expect(h.input.jobs).toEqual([
        { readyMs: from, runMs: 500, priority: 0, flowKey: null, failed: false },
        { readyMs: from + 10_000, runMs: 300, priority: 0, flowKey: "k", failed: true },
        { readyMs: NOW - 3000, runMs: 2000, priority: 0, flowKey: null, failed: false },
        // Still queued: the median run time of those that finished (300, 500, 3000).
        { readyMs: NOW - 1000, runMs: 500, priority: 0, flowKey: null, failed: false },
      ]);
      // The one running at the start overlapped the one waiting at the start.
      expect(h.peakRunning).toBe(2);
    });

    it("cuts a window holding more jobs than the bound short, and says so", async () => {
      const q = queue();
      const from = NOW - HOUR;
      await record(
        q,
        Array.from({ length: 10 }, (_, i) => ({
          state: "succeeded" as const,
          readyMs: from + i * 1000,
          startedMs: from + i * 1000,
          finishedMs: from + i * 1000 + 10,
        })),
      );
      const h = await readHistory(db, { queue: q, fromMs: from, toMs: NOW, maxJobs: 4 });
      expect(h.truncated).toBe(true);
      expect(h.input.jobs).toHaveLength(4);
      expect(h.toMs).toBe(from + 4000);
    });

    it("reports the jobs a lower cap delays, their longest extra wait and the backlog, and writes nothing", async () => {
      const q = queue();
      // A burst of 20 jobs of 1 s each, all at once, 10 minutes ago; then a job an hour and a half ago.
      const at = NOW - 600_000;
      await record(q, [
        {
          state: "succeeded",
          readyMs: NOW - 90 * 60_000,
          startedMs: NOW - 90 * 60_000,
          finishedMs: NOW - 89 * 60_000,
        },
        ...Array.from({ length: 20 }, () => ({
          state: "succeeded" as const,
          readyMs: at,
          startedMs: at,
          finishedMs: at + 1000,
        })),
      ]);
      await queues.queueSetConcurrency(q, 50, ACTOR);
      const before = await snapshot(q);
      const r = await run({ kind: "max_running", queue: q, maxRunning: 5 });
      expect(r).toMatchObject({
        queue: q,
        jobs: 20,
        truncated: false,
        windowSeconds: 3600,
        fromMs: NOW - HOUR,
        toMs: NOW,
        // The workers ran 20 at once, below the cap of 50: the replays assume no more.
        workers: 20,
        delayed: 15,
        sooner: 0,
        longestExtraWaitMs: 3000,
      });
      expect(r.currentLimits.maxRunning).toBe(50);
      expect(r.proposedLimits.maxRunning).toBe(5);
      expect(r.current.peakBacklog).toBe(0);
      expect(r.proposed.peakBacklog).toBe(15);
      expect(await snapshot(q)).toEqual(before);
      // A wider window reaches the older job too.
      expect(
        (await run({ kind: "max_running", queue: q, maxRunning: 5 }, { windowSeconds: 7200 })).jobs,
      ).toBe(21);
    });

    it("replays a throttle, a claim rate and a flow-key limit as the verbs would set them", async () => {
      const q = queue();
      const at = NOW - 60_000;
      await record(
        q,
        Array.from({ length: 6 }, (_, i) => ({
          state: "succeeded" as const,
          readyMs: at,
          startedMs: at,
          finishedMs: at + 10,
          flowKey: i % 2 === 0 ? "acme" : "other",
        })),
      );
      const before = await snapshot(q);
      // One claim per 10 s: the 2nd to 6th wait 10 s to 50 s more.
      const t = await run({ kind: "throttle", queue: q, limit: 6, periodMs: 60_000 });
      expect([t.delayed, t.longestExtraWaitMs, t.proposedLimits.throttle]).toEqual([
        5,
        50_000,
        { limit: 6, periodMs: 60_000 },
      ]);
      // ensure_queue's default burst of a claim rate is 1: six claims a minute, one every 10 s.
      const c = await run({ kind: "profile", queue: q, profile: { claim_rate_per_minute: 6 } });
      expect([c.delayed, c.longestExtraWaitMs, c.proposedLimits.claimRate]).toEqual([
        5,
        50_000,
        { ratePerMinute: 6, burst: 1 },
      ]);
      // Only acme's three jobs are held back, the others start at once.
      const f = await run({ kind: "flow_limit", queue: q, flowKey: "acme", ratePerMinute: 6, burst: null });
      expect([f.delayed, f.longestExtraWaitMs]).toEqual([2, 20_000]);
      expect(f.proposedLimits.flowLimits.get("acme")).toEqual({ ratePerMinute: 6, burst: 1 });
      expect(await snapshot(q)).toEqual(before);
    });

    it("refuses what the real verb refuses, with the same error, and writes nothing", async () => {
      const q = queue();
      await knownQueues(db, q);
      await queues.queueSetThrottle(q, 5, 60_000, ACTOR, "config");
      const before = await snapshot(q);
      const same = async (
        change: LimitChange,
        real: () => Promise<unknown>,
        type: new (...a: never[]) => Error,
      ) => {
        const a = await run(change).catch((e: Error) => e);
        const b = await real().catch((e: Error) => e);
        expect(a).toBeInstanceOf(type);
        expect(b).toBeInstanceOf(type);
        expect((a as Error).message).toBe((b as Error).message);
        return a as Error;
      };
      const e = await same(
        { kind: "max_running", queue: q, maxRunning: 0 },
        () => queues.queueSetConcurrency(q, 0, ACTOR),
        InvalidArgumentError,
      );
      expect((e as InvalidArgumentError).field).toBe("max_running");
      await same(
        { kind: "throttle", queue: q, limit: 10, periodMs: 999 },
        () => queues.queueSetThrottle(q, 10, 999, ACTOR),
        InvalidArgumentError,
      );
      // A throttle from the gateway's config is the config's to change.
      await same(
        { kind: "throttle", queue: q, limit: 10, periodMs: 60_000 },
        () => queues.queueSetThrottle(q, 10, 60_000, ACTOR),
        FailedPreconditionError,
      );
      await same(
        { kind: "profile", queue: q, profile: { claim_burst: 5 } },
        () => queues.queueEnsure(q, { claim_burst: 5 }, ACTOR),
        InvalidArgumentError,
      );
      await same(
        { kind: "flow_limit", queue: q, flowKey: "acme", ratePerMinute: 60, burst: 0 },
        () => queues.flowLimitSet("acme", 60, 0, ACTOR),
        InvalidArgumentError,
      );
      await same(
        { kind: "max_running", queue: "never-seen", maxRunning: 5 },
        () => queues.queueSetConcurrency("never-seen", 5, ACTOR),
        NotFoundError,
      );
      await expect(
        run({ kind: "max_running", queue: q, maxRunning: 5 }, { windowSeconds: 59 }),
      ).rejects.toThrow("window_seconds must be from 60 to 86400 (got 59)");
      await expect(run({ kind: "max_running", queue: q, maxRunning: 5 }, { minDelayMs: 0 })).rejects.toThrow(
        "min_delay_ms must be from 1 to 86400000 (got 0)",
      );
      expect(await snapshot(q)).toEqual(before);
    });
  });
}
