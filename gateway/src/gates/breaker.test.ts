import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FailedPreconditionError, InvalidArgumentError } from "../errors.js";
import { type Db, pgliteDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import { QueueStore } from "../store/queue-store.js";
import { Store } from "../store/store.js";
import type { ClaimedJob } from "../store/types.js";
import { newJob } from "../testing/new-job.js";
import { knownQueues } from "../testing/services.js";
import { testClaimer } from "../testing/test-claimer.js";

const ACTOR = "operator:test";

/**
 * The breaker's state machine on an injected clock: every claim and settle passes an explicit `now`
 * to SQL (jobs_claim, JobsSettle -> breaker_record, LeasesRescue -> breaker_probe_lost), so the
 * cooldown and the rolling windows are driven by the test, not by the wall clock.
 */
describe("circuit breaker (state machine, injected clock)", () => {
  let db: Db;
  let store: Store;
  let queues: QueueStore;
  // Verbs stamp tripped_at / ramp_started_at with the database's now(); the injected clock starts there.
  const T0 = Date.now();
  const at = (ms: number) => new Date(T0 + ms);

  beforeAll(async () => {
    db = await pgliteDb();
    await migrate(db);
    store = new Store(db);
    queues = new QueueStore(db);
  });
  afterAll(() => db.close());

  const job = (queue: string) => newJob(queue, { maxAttempts: 1 });
  const enqueue = (queue: string, n: number) =>
    store.jobsEnqueue(
      Array.from({ length: n }, () => job(queue)),
      at(-60_000),
    );
  /** One poll of one queue at t: its jobs, or the verdict of pause, breaker or max_running. */
  const claim = async (queue: string, t: number | null, limit = 1, leaseMs = 30_000) => {
    const polls = [{ limit, leaseMs, workerId: "w" }];
    const r = await store.jobsClaimMany({ queues: [queue], polls }, t === null ? null : at(t));
    const [v] = r.verdicts[0] ?? [];
    return { jobs: r.jobs[0] ?? [], verdict: v ? { reason: v.reason, retryAfterMs: v.retryAfterMs } : null };
  };
  const claimOne = async (queue: string, t: number): Promise<ClaimedJob> => {
    const r = await claim(queue, t);
    const j = r.jobs[0];
    if (!j) throw new Error(`no job claimed: ${JSON.stringify(r.verdict)}`);
    return j;
  };
  const settle = (j: ClaimedJob, ok: boolean, t: number, durationMs: number | null = null) =>
    store.jobsSettle(
      [
        ok
          ? { jobId: j.id, attempt: j.attempt, kind: "success", result: new Uint8Array(), durationMs }
          : {
              jobId: j.id,
              attempt: j.attempt,
              kind: "failure",
              error: { type: "Down", message: "downstream down", retryable: false },
              delayMs: null,
              durationMs,
            },
      ],
      at(t),
    );
  /** Claims one job and settles it at the same instant. */
  const run = async (queue: string, t: number, ok: boolean, durationMs: number | null = null) => {
    const j = await claimOne(queue, t);
    await settle(j, ok, t, durationMs);
    return j;
  };
  const flow = async (queue: string) => {
    const rows = await db.query<{
      breaker_state: string;
      breaker_failure_streak: number;
      breaker_opened_total: number;
      breaker_tripped_at: Date | null;
      breaker_probe_job_id: string | null;
      ramp_started_at: Date | null;
    }>({ name: "", text: "select * from taskq.queue_flow where queue = $1" }, [queue]);
    const r = rows[0];
    if (!r) throw new Error(`no queue ${queue}`);
    return r;
  };
  const events = (queue: string) =>
    db.query<{ job_id: string; event_type: string; data: Record<string, unknown>; created_at: Date }>(
      {
        name: "",
        text: `select e.job_id::text, e.event_type, e.data, e.created_at from taskq.job_events e
               join taskq.jobs j on j.id = e.job_id where j.queue = $1 order by e.id`,
      },
      [queue],
    );
  const auditCount = async (queue: string) => {
    const [r] = await db.query<{ n: number }>(
      { name: "", text: "select count(*)::int as n from taskq.queue_audit where queue = $1" },
      [queue],
    );
    return r?.n ?? 0;
  };

  it("streak: one success resets it; N consecutive failures open; exact cooldown; one probe; probe failure re-opens; probe success closes and starts the ramp", async () => {
    const q = "streak";
    await knownQueues(db, q);
    await queues.queueEnsure(q, { ramp_seconds: 30 }, ACTOR);
    await queues.breakerConfig(q, 3, 10, 1, ACTOR);
    await enqueue(q, 20);
    await run(q, 0, false);
    await run(q, 10, false);
    expect((await flow(q)).breaker_failure_streak).toBe(2);
    await run(q, 20, true); // one success resets the streak
    expect(await flow(q)).toMatchObject({ breaker_state: "closed", breaker_failure_streak: 0 });
    await run(q, 30, false);
    await run(q, 40, false);
    expect((await flow(q)).breaker_state).toBe("closed");
    const third = await run(q, 50, false);
    expect(await flow(q)).toMatchObject({
      breaker_state: "open",
      breaker_failure_streak: 3,
      breaker_opened_total: 1,
      breaker_tripped_at: at(50),
    });
    expect(await events(q)).toMatchObject([
      {
        job_id: third.id,
        event_type: "breaker_opened",
        data: { trigger: "streak", failure_streak: 3, failure_threshold: 3 },
      },
    ]);
    // Open: BREAKER_OPEN with exactly the cooldown left, however many jobs are asked for.
    expect(await claim(q, 1050, 10)).toMatchObject({
      jobs: [],
      verdict: { reason: "BREAKER_OPEN", retryAfterMs: 9000 },
    });
    expect((await claim(q, 10_049, 10)).verdict).toEqual({ reason: "BREAKER_OPEN", retryAfterMs: 1 });
    // Cooldown over: exactly one job, the probe, then BREAKER_PROBING.
    const probe = await claim(q, 10_050, 10);
    expect(probe.jobs).toHaveLength(1);
    const half = await flow(q);
    expect(half.breaker_state).toBe("half_open");
    expect(String(half.breaker_probe_job_id)).toBe(probe.jobs[0]?.id);
    expect(await claim(q, 10_060, 10)).toMatchObject({
      jobs: [],
      verdict: { reason: "BREAKER_PROBING", retryAfterMs: 1000 },
    });
    // The probe fails: open again with a fresh cooldown.
    await settle(probe.jobs[0] as ClaimedJob, false, 11_000);
    expect(await flow(q)).toMatchObject({
      breaker_state: "open",
      breaker_opened_total: 2,
      breaker_tripped_at: at(11_000),
    });
    expect((await claim(q, 11_000)).verdict).toEqual({ reason: "BREAKER_OPEN", retryAfterMs: 10_000 });
    // Next probe succeeds: closed, streak reset, ramp started at the close.
    const probe2 = await claimOne(q, 21_000);
    await settle(probe2, true, 21_500);
    expect(await flow(q)).toMatchObject({
      breaker_state: "closed",
      breaker_failure_streak: 0,
      breaker_probe_job_id: null,
      ramp_started_at: at(21_500),
    });
    // Each probe's claim is recorded as half_open (taskq.queues_breaker_half_open), at the claim's time.
    expect((await events(q)).map((e) => [e.event_type, e.job_id, e.created_at])).toEqual([
      ["breaker_opened", third.id, at(50)],
      ["breaker_half_open", probe.jobs[0]?.id, at(10_050)],
      ["breaker_reopened", probe.jobs[0]?.id, at(11_000)],
      ["breaker_half_open", probe2.id, at(21_000)],
      ["breaker_closed", probe2.id, at(21_500)],
    ]);
    expect((await claim(q, 21_600, 3)).jobs).toHaveLength(3);
  });

  it("half_open_successes 2 needs two probe successes, one at a time; a cancelled probe frees the slot", async () => {
    const q = "two-probes";
    await knownQueues(db, q);
    await queues.breakerConfig(q, 1, 5, 2, ACTOR);
    await enqueue(q, 10);
    await run(q, 0, false);
    expect((await flow(q)).breaker_state).toBe("open");
    const p1 = await claimOne(q, 5000);
    expect((await claim(q, 5001)).verdict?.reason).toBe("BREAKER_PROBING");
    await store.jobsSettle([{ jobId: p1.id, attempt: p1.attempt, kind: "cancel", reason: "" }], at(5002));
    const p2 = await claimOne(q, 5003); // the cancelled probe counted neither way
    await settle(p2, true, 5100);
    expect((await flow(q)).breaker_state).toBe("half_open");
    const p3 = await claimOne(q, 5101);
    expect((await claim(q, 5102, 5)).verdict?.reason).toBe("BREAKER_PROBING");
    await settle(p3, true, 5200);
    expect((await flow(q)).breaker_state).toBe("closed");
  });

  it("a probe whose lease expires re-opens the breaker with a fresh cooldown", async () => {
    const q = "lost-probe";
    await knownQueues(db, q);
    await queues.breakerConfig(q, 1, 5, 1, ACTOR);
    await enqueue(q, 5);
    await run(q, 0, false);
    const probe = (await claim(q, 5000, 1, 1000)).jobs[0] as ClaimedJob;
    expect((await flow(q)).breaker_state).toBe("half_open");
    await store.leasesRescue(100, at(6500));
    expect(await flow(q)).toMatchObject({
      breaker_state: "open",
      breaker_probe_job_id: null,
      breaker_tripped_at: at(6500),
    });
    expect((await events(q)).at(-1)).toMatchObject({
      job_id: probe.id,
      event_type: "breaker_reopened",
      data: { trigger: "probe_lease_expired" },
    });
    expect((await claim(q, 6500)).verdict).toEqual({ reason: "BREAKER_OPEN", retryAfterMs: 5000 });
  });

  it("rate: a quiet queue below min volume never trips; a sustained ratio over the window does", async () => {
    const q = "rate";
    await knownQueues(db, q);
    await queues.breakerConfig(q, 1000, 30, 1, ACTOR);
    await queues.breakerRate(q, 0.5, 60, 20, ACTOR);
    await enqueue(q, 100);
    // A quiet queue: 10 failures in a row, 100% failed, but below min volume 20.
    for (let i = 0; i < 10; i++) await run(q, i * 1000, false);
    expect((await flow(q)).breaker_state).toBe("closed");
    // Those age out of the 60 s window; then 19 settles at 50% stay closed (below min volume) ...
    const t = 100_000;
    for (let i = 0; i < 19; i++) await run(q, t + i * 100, i % 2 === 0); // 9 of 19 fail
    expect((await flow(q)).breaker_state).toBe("closed");
    // ... and the 20th, a failure, makes 10 of 20 = 50%: open.
    const last = await run(q, t + 2000, false);
    expect((await flow(q)).breaker_state).toBe("open");
    expect((await events(q)).at(-1)).toMatchObject({
      job_id: last.id,
      event_type: "breaker_opened",
      data: { trigger: "rate", failures: 10, settles: 20, failure_ratio: 0.5, min_volume: 20 },
    });
  });

  it("rate: evaluated on every settle once min volume is reached, so a success can complete the trip", async () => {
    const q = "rate-on-success";
    await knownQueues(db, q);
    // A streak threshold out of reach: only the rate can trip.
    await queues.breakerConfig(q, 1000, 30, 1, ACTOR);
    await queues.breakerRate(q, 0.5, 60, 20, ACTOR);
    await enqueue(q, 30);
    // 19 failures: 100% failed, below min volume 20.
    for (let i = 0; i < 19; i++) await run(q, i * 100, false);
    expect((await flow(q)).breaker_state).toBe("closed");
    // The 20th settle, a success, makes the window 19 of 20 failed (95% >= 50%): open on it.
    const twentieth = await run(q, 2000, true);
    expect((await flow(q)).breaker_state).toBe("open");
    expect((await events(q)).at(-1)).toMatchObject({
      job_id: twentieth.id,
      event_type: "breaker_opened",
      data: { trigger: "rate", failures: 19, settles: 20, failure_ratio: 0.95, min_volume: 20 },
    });
  });

  it("rate: below the ratio never trips", async () => {
    const q = "rate-low";
    await knownQueues(db, q);
    await queues.breakerConfig(q, 1000, 30, 1, ACTOR);
    await queues.breakerRate(q, 0.5, 60, 20, ACTOR);
    await enqueue(q, 60);
    for (let i = 0; i < 60; i++) await run(q, i * 100, i % 3 !== 0); // 1 in 3 fails
    expect((await flow(q)).breaker_state).toBe("closed");
  });

  it("latency: one slow job among many does not trip; sustained slow successes do, at 0% failures", async () => {
    const q = "latency";
    await knownQueues(db, q);
    await queues.breakerConfig(q, 1000, 30, 1, ACTOR);
    await queues.breakerLatency(q, 2000, 60, 10, ACTOR);
    await enqueue(q, 50);
    for (let i = 0; i < 19; i++) await run(q, i * 100, true, 100);
    await run(q, 2000, true, 30_000); // one very slow job among many: avg (1900 + 30000) / 20 = 1595
    expect((await flow(q)).breaker_state).toBe("closed");
    // Later, every job slow but succeeding: the window (the first job aged out) averages 2500 ms.
    const t = 120_000;
    for (let i = 0; i < 9; i++) await run(q, t + i * 100, true, 2500);
    expect((await flow(q)).breaker_state).toBe("closed"); // 9 < min volume 10
    const tenth = await run(q, t + 1000, true, 2500);
    expect(await flow(q)).toMatchObject({ breaker_state: "open", breaker_failure_streak: 0 });
    expect((await events(q)).at(-1)).toMatchObject({
      job_id: tenth.id,
      data: { trigger: "latency", avg_latency_ms: 2500, settles: 10, threshold_ms: 2000 },
    });
  });

  it("latency without a settle duration: started_at to the settle", async () => {
    const q = "latency-started";
    await knownQueues(db, q);
    await queues.breakerConfig(q, 1000, 30, 1, ACTOR);
    await queues.breakerLatency(q, 1000, 60, 2, ACTOR);
    await enqueue(q, 2);
    const a = await claimOne(q, 0);
    const b = await claimOne(q, 0);
    await settle(a, true, 1500);
    await settle(b, true, 1500);
    expect((await events(q)).at(-1)?.data).toMatchObject({ trigger: "latency", avg_latency_ms: 1500 });
  });

  it("manual trip (fresh cooldown) and close (ramp); the breaker off closes it", async () => {
    const q = "manual";
    await knownQueues(db, q);
    await queues.queueEnsure(q, { ramp_seconds: 60 }, ACTOR);
    await queues.breakerConfig(q, 5, 30, 1, ACTOR);
    await enqueue(q, 3);
    const tripped = await queues.breakerTrip(q, ACTOR);
    expect(tripped.breaker).toMatchObject({ state: "open", opened_total: 1 });
    const r = await claim(q, null, 5, 1000); // on the database's clock, like the trip
    expect(r.verdict?.reason).toBe("BREAKER_OPEN");
    expect(r.verdict?.retryAfterMs).toBeGreaterThan(29_000);
    const closed = await queues.breakerClose(q, ACTOR);
    expect(closed.breaker).toMatchObject({ state: "closed", failure_streak: 0 });
    expect(closed.ramp_started_at).not.toBeNull();
    await queues.breakerTrip(q, ACTOR);
    const off = await queues.breakerConfig(q, null, null, null, ACTOR);
    expect(off.breaker).toBeNull();
    expect((await flow(q)).breaker_state).toBe("closed");
  });

  it("validates every verb naming the field; each verb writes one audit row, a refused one none", async () => {
    const q = "verbs";
    await knownQueues(db, q);
    const refused: [() => Promise<unknown>, string][] = [
      [() => queues.breakerConfig(q, 0, 30, 1, ACTOR), "failure_threshold"],
      [() => queues.breakerConfig(q, 5, 0, 1, ACTOR), "cooldown_seconds"],
      [() => queues.breakerConfig(q, 5, null, 1, ACTOR), "cooldown_seconds"],
      [() => queues.breakerConfig(q, 5, 30, 0, ACTOR), "half_open_successes"],
      [() => queues.breakerRate(q, 0.5, 60, 20, ACTOR), "breaker"], // the breaker is off
      [() => queues.breakerLatency(q, 2000, 60, 10, ACTOR), "breaker"],
    ];
    for (const [verb, field] of refused) {
      await expect(verb()).rejects.toMatchObject({ name: "InvalidArgumentError", field });
    }
    await expect(queues.breakerTrip(q, ACTOR)).rejects.toBeInstanceOf(FailedPreconditionError);
    await expect(queues.breakerClose(q, ACTOR)).rejects.toBeInstanceOf(FailedPreconditionError);
    expect(await auditCount(q)).toBe(0);

    await queues.breakerConfig(q, 5, 30, 1, ACTOR);
    const refusedOn: [() => Promise<unknown>, string][] = [
      [() => queues.breakerRate(q, 0, 60, 20, ACTOR), "failure_ratio"],
      [() => queues.breakerRate(q, 1.01, 60, 20, ACTOR), "failure_ratio"],
      [() => queues.breakerRate(q, -0.5, 60, 20, ACTOR), "failure_ratio"],
      [() => queues.breakerRate(q, Number.NaN, 60, 20, ACTOR), "failure_ratio"],
      [() => queues.breakerRate(q, 0.5, 0, 20, ACTOR), "window_seconds"],
      [() => queues.breakerRate(q, 0.5, 60, 0, ACTOR), "min_volume"],
      [() => queues.breakerLatency(q, 0, 60, 10, ACTOR), "threshold_ms"],
      [() => queues.breakerLatency(q, 2000, -1, 10, ACTOR), "window_seconds"],
      [() => queues.breakerLatency(q, 2000, 60, 0, ACTOR), "min_volume"],
    ];
    for (const [verb, field] of refusedOn) {
      const err = await verb().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBe(field);
    }
    expect(await auditCount(q)).toBe(1);
    const s = await queues.breakerRate(q, 1, 60, 20, ACTOR); // ratio 1 is allowed
    expect(s.breaker?.rate).toEqual({ failure_ratio: 1, window_seconds: 60, min_volume: 20 });
    await queues.breakerRate(q, null, null, null, ACTOR);
    await queues.breakerLatency(q, 2000, 60, 10, ACTOR);
    await queues.breakerLatency(q, null, null, null, ACTOR);
    await queues.breakerTrip(q, ACTOR);
    await queues.breakerClose(q, ACTOR);
    await queues.breakerConfig(q, null, null, null, ACTOR);
    const rows = await db.query<{ event_type: string; actor: string }>(
      { name: "", text: "select event_type, actor from taskq.queue_audit where queue = $1 order by id" },
      [q],
    );
    expect(rows.map((r) => r.event_type)).toEqual([
      "queue.set_breaker",
      "queue.set_breaker_rate",
      "queue.set_breaker_rate",
      "queue.set_breaker_latency",
      "queue.set_breaker_latency",
      "queue.trip_breaker",
      "queue.close_breaker",
      "queue.set_breaker",
    ]);
    expect(new Set(rows.map((r) => r.actor))).toEqual(new Set([ACTOR]));
  });

  it("prunes samples beyond the largest window", async () => {
    const q = "prune";
    await knownQueues(db, q);
    await queues.breakerConfig(q, 1000, 30, 1, ACTOR);
    await queues.breakerRate(q, 0.9, 60, 100, ACTOR);
    await queues.breakerLatency(q, 60_000, 120, 100, ACTOR);
    await enqueue(q, 3);
    await run(q, 0, true);
    await run(q, 100_000, true);
    await store.breakerSamplesPrune(100_000, at(150_000));
    const [left] = await db.query<{ n: number }>(
      { name: "", text: "select count(*)::int as n from taskq.breaker_samples where queue = $1" },
      [q],
    );
    expect(left?.n).toBe(1); // 150 s - 120 s (the largest window) keeps the sample at 100 s only
  });

  it("gate order through the claimer: PAUSED over BREAKER_OPEN over MAX_RUNNING; a half-open queue hands out one probe", async () => {
    const q = "order";
    await knownQueues(db, q);
    const { profiles, claimer } = testClaimer(db);
    const poll = async (maxJobs = 5) => {
      profiles.clear();
      return claimer.poll(
        { queues: [q], maxJobs, maxWaitMs: 0, workerId: "w", leaseMs: 30_000 },
        new AbortController().signal,
      );
    };
    await enqueue(q, 10);
    await queues.queueSetConcurrency(q, 1, ACTOR);
    await queues.breakerConfig(q, 2, 1, 1, ACTOR);
    const first = await poll();
    expect(first.jobs).toHaveLength(1);
    expect((await poll()).verdicts[0]?.reason).toBe("MAX_RUNNING");
    await queues.breakerTrip(q, ACTOR);
    expect((await poll()).verdicts[0]?.reason).toBe("BREAKER_OPEN");
    await queues.queuePause(q, ACTOR);
    expect((await poll()).verdicts[0]?.reason).toBe("PAUSED");
    await queues.queueResume(q, ACTOR);
    await queues.queueSetConcurrency(q, null, ACTOR);
    await new Promise((r) => setTimeout(r, 1100)); // the 1 s cooldown, on the database's clock
    const probe = await poll();
    expect(probe.jobs).toHaveLength(1);
    expect((await poll()).verdicts).toEqual([{ queue: q, reason: "BREAKER_PROBING", retryAfterMs: 1000 }]);
    await store.jobsSettle([
      { jobId: probe.jobs[0]?.id as string, attempt: 1, kind: "success", result: new Uint8Array() },
    ]);
    expect((await poll()).jobs).toHaveLength(5);
  });
});
