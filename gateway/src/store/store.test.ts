import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";
import { migrate } from "./migrate.js";
import { Store } from "./store.js";
import type { NewJob } from "./types.js";

const job = (over: Partial<NewJob> = {}) =>
  newJob("q", {
    payload: new TextEncoder().encode("{}"),
    contentType: "application/json",
    maxAttempts: 3,
    ...over,
  });

const claimOne = (store: Store, queue = "q", now?: Date) =>
  store.jobsClaim({ queues: [queue], limit: 1, leaseMs: 30_000, workerId: "w" }, now);

// The same suite runs on every engine the store supports: PGlite and Postgres share one SQL.
for (const engine of engines) {
  describe.skipIf(!engine.available())(`store on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let store: Store;
    let n = 0;
    const queue = () => `q${++n}`;
    beforeAll(async () => {
      ({ db, close } = await engine.open());
      store = new Store(db);
    });
    afterAll(() => close());

    it("migrates once, then finds nothing to do", async () => {
      expect(await migrate(db)).toEqual([]);
    });

    it("enqueues in order and claims best priority first, then oldest", async () => {
      const q = queue();
      const ids = await store.jobsEnqueue([
        job({ queue: q }),
        job({ queue: q, priority: 5 }),
        job({ queue: q }),
      ]);
      expect(ids.map((r) => r.duplicate)).toEqual([false, false, false]);
      const claimed = await store.jobsClaim({ queues: [q], limit: 10, leaseMs: 1000, workerId: "w1" });
      expect(claimed.map((j) => j.id)).toEqual([ids[1]?.id, ids[0]?.id, ids[2]?.id]);
      expect(claimed.every((j) => j.attempt === 1)).toBe(true);
      expect(await store.jobsClaim({ queues: [q], limit: 10, leaseMs: 1000, workerId: "w1" })).toEqual([]);
    });

    it("keeps payload bytes, headers and content type intact", async () => {
      const q = queue();
      const payload = new Uint8Array([0, 255, 1, 128]);
      await store.jobsEnqueue([
        job({ queue: q, payload, headers: { a: "b" }, contentType: "x/y", flowKey: "k" }),
      ]);
      const [c] = await claimOne(store, q);
      expect(Array.from(c?.payload ?? [])).toEqual([0, 255, 1, 128]);
      expect(c).toMatchObject({ headers: { a: "b" }, contentType: "x/y", flowKey: "k" });
    });

    it("returns the first job for a repeated idempotency key, inside a batch and across calls", async () => {
      const q = queue();
      const [a, b, c] = await store.jobsEnqueue([
        job({ queue: q, idempotencyKey: "k1" }),
        job({ queue: q }),
        job({ queue: q, idempotencyKey: "k1" }),
      ]);
      expect(a?.duplicate).toBe(false);
      expect(c).toEqual({ id: a?.id, duplicate: true });
      expect(b?.id).not.toBe(a?.id);
      const [again] = await store.jobsEnqueue([job({ queue: q, idempotencyKey: "k1" })]);
      expect(again).toEqual({ id: a?.id, duplicate: true });
    });

    it("settles once: a repeat answers the same and changes nothing; another outcome conflicts", async () => {
      const q = queue();
      await store.jobsEnqueue([job({ queue: q })]);
      const [c] = await claimOne(store, q);
      if (!c) throw new Error("no job");
      const ok = { jobId: c.id, attempt: 1, kind: "success", result: new Uint8Array([7]) } as const;
      const [first] = await store.jobsSettle([ok]);
      expect(first).toMatchObject({ status: "accepted", state: "succeeded" });
      const before = await store.jobGet(c.id);
      const [second] = await store.jobsSettle([ok]);
      expect(second).toMatchObject({ status: "accepted", state: "succeeded" });
      expect(await store.jobGet(c.id)).toEqual(before);
      const [other] = await store.jobsSettle([{ jobId: c.id, attempt: 1, kind: "cancel", reason: "" }]);
      expect(other?.status).toBe("conflict");
      expect(await store.jobGet(c.id)).toEqual(before);
      const [missing] = await store.jobsSettle([{ ...ok, jobId: "999999999" }]);
      expect(missing?.status).toBe("not_found");
    });

    it("retries a failure after its delay, then fails it when attempts are spent", async () => {
      const q = queue();
      const t0 = new Date("2030-01-01T00:00:00Z");
      const [e] = await store.jobsEnqueue([job({ queue: q, maxAttempts: 2 })], t0);
      const fail = (attempt: number) =>
        store.jobsSettle(
          [
            {
              jobId: e?.id ?? "",
              attempt,
              kind: "failure",
              delayMs: 5000,
              error: { type: "E", message: "m", retryable: true },
            },
          ],
          t0,
        );
      await claimOne(store, q, t0);
      const [r1] = await fail(1);
      expect(r1).toMatchObject({
        status: "accepted",
        state: "scheduled",
        nextRunAt: new Date(t0.getTime() + 5000),
      });
      expect(await claimOne(store, q, t0)).toEqual([]);
      expect((await store.jobsPromote(100, new Date(t0.getTime() + 4999))).count).toBe(0);
      expect(await store.jobsPromote(100, new Date(t0.getTime() + 5000))).toEqual({
        count: 1,
        readyQueues: [q],
      });
      const [c2] = await claimOne(store, q, t0);
      expect(c2?.attempt).toBe(2);
      const [r2] = await fail(2);
      expect(r2).toMatchObject({ status: "accepted", state: "failed" });
      const rec = await store.jobGet(e?.id ?? "");
      expect(rec).toMatchObject({
        state: "failed",
        outcome: "failed",
        lastError: { type: "E", message: "m" },
      });
    });

    it("fails a non-retryable failure at once", async () => {
      const q = queue();
      await store.jobsEnqueue([job({ queue: q, maxAttempts: 5 })]);
      const [c] = await claimOne(store, q);
      const [r] = await store.jobsSettle([
        {
          jobId: c?.id ?? "",
          attempt: 1,
          kind: "failure",
          delayMs: null,
          error: { type: "E", message: "", retryable: false },
        },
      ]);
      expect(r?.state).toBe("failed");
    });

    it("rescues an expired lease; the old holder's settle and heartbeat are refused and change nothing", async () => {
      const q = queue();
      // Earlier than every other lease of this suite, so the rescue counts only this one.
      const t0 = new Date("2019-01-01T00:00:00Z");
      await store.jobsEnqueue([job({ queue: q })], t0);
      const [c] = await store.jobsClaim({ queues: [q], limit: 1, leaseMs: 1000, workerId: "w" }, t0);
      if (!c) throw new Error("no job");
      expect((await store.leasesRescue(100, new Date(t0.getTime() + 999))).count).toBe(0);
      expect(await store.leasesRescue(100, new Date(t0.getTime() + 1001))).toEqual({
        count: 1,
        readyQueues: [q],
      });
      const [c2] = await claimOne(store, q, new Date(t0.getTime() + 1002));
      expect(c2?.attempt).toBe(2);
      const before = await store.jobGet(c.id);
      const [late] = await store.jobsSettle([
        { jobId: c.id, attempt: 1, kind: "success", result: new Uint8Array() },
      ]);
      expect(late?.status).toBe("lease_lost");
      const [beat] = await store.leasesExtend([{ jobId: c.id, attempt: 1, extendMs: null }]);
      expect(beat?.state).toBe("lease_lost");
      expect(await store.jobGet(c.id)).toEqual(before);
    });

    it("fails a job whose last attempt's lease expires", async () => {
      const q = queue();
      const t0 = new Date("2030-01-01T00:00:00Z");
      const [e] = await store.jobsEnqueue([job({ queue: q, maxAttempts: 1 })], t0);
      await store.jobsClaim({ queues: [q], limit: 1, leaseMs: 1000, workerId: "w" }, t0);
      await store.leasesRescue(100, new Date(t0.getTime() + 2000));
      expect(await store.jobGet(e?.id ?? "")).toMatchObject({ state: "failed", outcome: "lease_expired" });
    });

    it("extends leases by the claimed length and reports a requested cancel", async () => {
      const q = queue();
      const t0 = new Date("2030-01-01T00:00:00Z");
      await store.jobsEnqueue([job({ queue: q }), job({ queue: q })], t0);
      const claimed = await store.jobsClaim({ queues: [q], limit: 2, leaseMs: 1000, workerId: "w" }, t0);
      const [a, b] = claimed;
      await store.jobCancel(b?.id ?? "", "stop");
      const t1 = new Date(t0.getTime() + 500);
      const out = await store.leasesExtend(
        [
          { jobId: a?.id ?? "", attempt: 1, extendMs: null },
          { jobId: b?.id ?? "", attempt: 1, extendMs: 10_000 },
        ],
        t1,
      );
      expect(out[0]).toMatchObject({ state: "extended", leaseDeadline: new Date(t1.getTime() + 1000) });
      expect(out[1]).toMatchObject({
        state: "cancel_requested",
        leaseDeadline: new Date(t1.getTime() + 10_000),
      });
    });

    it("cancels a waiting job at once and never hands it out", async () => {
      const q = queue();
      const [e] = await store.jobsEnqueue([job({ queue: q })]);
      expect(await store.jobCancel(e?.id ?? "", "")).toMatchObject({
        state: "cancelled",
        outcome: "cancelled",
      });
      expect(await claimOne(store, q)).toEqual([]);
      expect(await store.jobCancel("123456789", "")).toBeNull();
    });

    it("holds delayed jobs until due and never hands out an expired one", async () => {
      const q = queue();
      const t0 = new Date("2030-01-01T00:00:00Z");
      await store.jobsEnqueue([job({ queue: q, delayMs: 60_000 }), job({ queue: q, ttlSeconds: 10 })], t0);
      expect(await claimOne(store, q, new Date(t0.getTime() + 11_000))).toEqual([]);
      expect(await store.jobsExpireTtl(100, new Date(t0.getTime() + 11_000))).toBe(1);
      await store.jobsPromote(100, new Date(t0.getTime() + 60_000));
      expect(await claimOne(store, q, new Date(t0.getTime() + 60_000))).toHaveLength(1);
    });

    it("releases an undelivered claim without spending an attempt", async () => {
      const q = queue();
      await store.jobsEnqueue([job({ queue: q, maxAttempts: 1 })]);
      const [c] = await claimOne(store, q);
      expect(await store.jobsRelease([{ jobId: c?.id ?? "", attempt: 1 }])).toEqual([q]);
      const [again] = await claimOne(store, q);
      expect(again).toMatchObject({ id: c?.id, attempt: 2, maxAttempts: 2 });
    });

    it("hides a finished job past retention, then drops its day's partition", async () => {
      const q = queue();
      // Reads hide by the database's clock, so the job finishes two hours before it.
      const [{ now }] = (await db.query({ name: "", text: "select now() as now" })) as [{ now: Date }];
      const finished = new Date(now.getTime() - 2 * 3_600_000);
      const [e] = await store.jobsEnqueue([job({ queue: q })], finished);
      await store.jobCancel(e?.id ?? "", "", finished);
      expect(await store.jobsMoveFinished(100)).toBeGreaterThanOrEqual(1);
      // Made as of the finish, the day's partition takes the job from the default one.
      expect(await store.jobHistoryKeep(100, 3 * 3600, finished)).toBe(0);
      expect(await store.jobGet(e?.id ?? "")).toMatchObject({ state: "cancelled" });
      expect(await store.jobHistoryKeep(100, 3600, now)).toBe(0);
      expect(await store.jobGet(e?.id ?? "")).toBeNull();
      const day = finished.toISOString().slice(0, 10).replaceAll("-", "");
      const partition = async () =>
        (await db.query({ name: "", text: `select to_regclass('taskq.job_history_${day}')::text as p` }))[0];
      // Hidden, while its day stays until the day's end is past retention (within the first hour of a UTC
      // day, the day before has just gone).
      const dayEnd = Date.UTC(finished.getUTCFullYear(), finished.getUTCMonth(), finished.getUTCDate() + 1);
      const stays = dayEnd > now.getTime() - 3_600_000;
      expect(await partition()).toEqual({ p: stays ? `taskq.job_history_${day}` : null });
      await store.jobHistoryKeep(100, 3600, new Date(now.getTime() + 2 * 86_400_000));
      expect(await partition()).toEqual({ p: null });
    });

    it("elects one leader until its lease lapses", async () => {
      const t0 = new Date("2030-01-01T00:00:00Z");
      expect(await store.leaderAcquire("m", "a", 1000, t0)).toBe(true);
      expect(await store.leaderAcquire("m", "b", 1000, t0)).toBe(false);
      expect(await store.leaderAcquire("m", "a", 1000, new Date(t0.getTime() + 500))).toBe(true);
      expect(await store.leaderAcquire("m", "b", 1000, new Date(t0.getTime() + 1600))).toBe(true);
      await store.leaderRelease("m", "b");
      expect(await store.leaderAcquire("m", "a", 1000, new Date(t0.getTime() + 1700))).toBe(true);
    });

    it("wakes a listener when an enqueue makes a job ready", async () => {
      const q = queue();
      const got: string[] = [];
      const unlisten = await db.listen(["taskq_jobs"], (_channel, p) => got.push(p));
      await store.jobsEnqueue([job({ queue: q })]);
      await store.jobsEnqueue([job({ queue: `${q}-later`, delayMs: 60_000 })]);
      const deadline = Date.now() + 2000;
      while (!got.includes(q) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 50));
      await unlisten();
      expect(got).toContain(q);
      expect(got).not.toContain(`${q}-later`);
    });
  });
}
