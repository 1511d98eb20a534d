import { JobState, ThrottleReason } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { explainSetup, ms, reasonOf } from "../testing/explain-harness.js";
import { haveService } from "../testing/services.js";

const services = haveService("postgres") && haveService("redis");

/**
 * One test per gate: exactly that condition on a real gateway (Postgres, the Redis limiter, an SDK
 * worker polling), then the first blocking reason, its figures, and the estimate against when the job
 * actually started. Tolerance: the job starts no more than 100 ms before its estimate, and no more
 * than 1000 ms after it (a worker's poll, a notification, a maintenance tick).
 */
const EARLY = 100;
const LATE = 1000;

function expectOnTime(estimateMs: number, actualMs: number) {
  expect(actualMs).toBeGreaterThanOrEqual(estimateMs - EARLY);
  expect(actualMs).toBeLessThanOrEqual(estimateMs + LATE);
}

describe.skipIf(!services)("explain: the gates, one at a time", () => {
  it("paused: since when and by whom (audit log); no estimate while paused", async () => {
    const s = await explainSetup();
    await s.worker();
    await s.admin.ensureQueue({ queue: s.queue });
    const before = Date.now();
    await s.admin.pauseQueue({ queue: s.queue });
    const id = await s.enqueue();
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("paused");
    const r = reasonOf(e, "paused");
    expect(r).toMatchObject({ blocking: true, verdict: ThrottleReason.PAUSED });
    expect(r.figures?.by).toBe("anonymous");
    const since = Date.parse(String(r.figures?.since));
    expect(since).toBeGreaterThanOrEqual(before - 1000);
    expect(since).toBeLessThanOrEqual(Date.now());
    expect(e.estimatedStart).toBeUndefined();
    expect(e.summary).toMatch(/^no estimate: the queue is paused.*; first blocking: paused: paused since/);
    // Resumed, it runs at once.
    await s.admin.resumeQueue({ queue: s.queue });
    expect(await s.startedAt(id, 5000)).toBeGreaterThan(since);
  });

  it("breaker open: opened at, by which trigger, cooldown end; the job starts as the probe then", async () => {
    const s = await explainSetup();
    await s.admin.ensureQueue({ queue: s.queue });
    await s.admin.setBreakerConfig({
      queue: s.queue,
      failureThreshold: 1,
      cooldownSeconds: 2,
      halfOpenSuccesses: 1,
    });
    await s.admin.tripBreaker({ queue: s.queue });
    await s.worker();
    const id = await s.enqueue();
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("breaker");
    const r = reasonOf(e, "breaker");
    expect(r).toMatchObject({ blocking: true, verdict: ThrottleReason.BREAKER_OPEN });
    expect(r.figures).toMatchObject({ state: "open", trigger: "tripped by anonymous", cooldown_seconds: 2 });
    const opened = Date.parse(String(r.figures?.opened_at));
    expect(Date.parse(String(r.figures?.cooldown_ends_at)) - opened).toBe(2000);
    expect(ms(r.nextAt)).toBe(opened + 2000);
    expect(ms(e.estimatedStart)).toBe(opened + 2000);
    expectOnTime(ms(e.estimatedStart), await s.startedAt(id));
  });

  it("breaker probing: the probe that is out, and no estimate until it settles", async () => {
    const s = await explainSetup();
    await s.admin.ensureQueue({ queue: s.queue });
    await s.admin.setBreakerConfig({
      queue: s.queue,
      failureThreshold: 1,
      cooldownSeconds: 1,
      halfOpenSuccesses: 1,
    });
    await s.admin.tripBreaker({ queue: s.queue });
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    await s.worker(() => held, 2);
    const probe = await s.enqueue();
    const id = await s.enqueue();
    await s.startedAt(probe);
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("breaker");
    const r = reasonOf(e, "breaker");
    expect(r).toMatchObject({ blocking: true, verdict: ThrottleReason.BREAKER_PROBING });
    expect(r.figures).toMatchObject({ state: "half_open", probe_job_id: probe, half_open_successes: 1 });
    expect(e.estimatedStart).toBeUndefined();
    expect(e.summary).toMatch(/^no estimate: the breaker's probe is out/);
    // The probe succeeds: the breaker closes, and the job runs.
    release();
    await s.startedAt(id);
  });

  it("max_running: running now against the cap; a place frees after the queue's average run time", async () => {
    const s = await explainSetup();
    await s.admin.ensureQueue({ queue: s.queue, profile: { max_running: 1 } });
    await s.worker(() => new Promise((r) => setTimeout(r, 1500)), 2);
    // One job run to the end first: the queue's average run time (1.5 s) is then known.
    await s.startedAt(await s.enqueue());
    const first = await s.enqueue();
    const firstStart = await s.startedAt(first, 5000);
    const id = await s.enqueue();
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("max_running");
    const r = reasonOf(e, "max_running");
    expect(r).toMatchObject({ blocking: true, verdict: ThrottleReason.MAX_RUNNING });
    expect(r.figures).toMatchObject({ running: 1, max_running: 1, cap_now: 1 });
    expect(Number(r.figures?.avg_run_ms)).toBeGreaterThanOrEqual(1500);
    expect(Number(r.figures?.avg_run_ms)).toBeLessThan(2000);
    expect(ms(e.estimatedStart) - firstStart).toBeGreaterThanOrEqual(1500);
    expectOnTime(ms(e.estimatedStart), await s.startedAt(id));
  });

  it("throttle: its interval and when the next slot frees", async () => {
    const s = await explainSetup();
    await s.admin.ensureQueue({ queue: s.queue });
    await s.admin.setQueueThrottle({ queue: s.queue, limit: 1, periodMs: 3000 });
    await s.worker();
    const first = await s.startedAt(await s.enqueue());
    const id = await s.enqueue();
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("throttle");
    const r = reasonOf(e, "throttle");
    expect(r).toMatchObject({ blocking: true, verdict: ThrottleReason.THROTTLE });
    expect(r.figures).toMatchObject({ limit: 1, period_ms: 3000, interval_ms: 3000, slot_held: false });
    // The slot the first claim took frees one interval after it (started_at is a moment after the take).
    // The take is on the limiter's clock and started_at on Postgres's, each to the millisecond: 1 ms of
    // rounding between them.
    const next = Date.parse(String(r.figures?.next_slot_at));
    expect(next - first).toBeGreaterThan(2900);
    expect(next - first).toBeLessThanOrEqual(3001);
    expect(ms(e.estimatedStart)).toBe(next);
    expectOnTime(next, await s.startedAt(id));
  });

  it("claim rate: tokens now and when the next is due", async () => {
    const s = await explainSetup();
    // 20 per minute: one token every 3 s; burst 1.
    await s.admin.ensureQueue({ queue: s.queue, profile: { claim_rate_per_minute: 20, claim_burst: 1 } });
    await s.worker();
    const first = await s.startedAt(await s.enqueue());
    const id = await s.enqueue();
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("claim_rate");
    const r = reasonOf(e, "claim_rate");
    expect(r).toMatchObject({ blocking: true, verdict: ThrottleReason.RATE_LIMIT });
    expect(r.figures).toMatchObject({ rate_per_minute: 20, burst: 1, tokens_now: 0 });
    const next = Date.parse(String(r.figures?.next_token_at));
    expect(next - first).toBeGreaterThan(2800);
    // The token was taken before the claim that started the first job, so its next is due at most 3 s
    // after that start; 1 ms more for rounding: the wait is rounded up to whole ms, the start cut to ms.
    expect(next - first).toBeLessThanOrEqual(3001);
    expectOnTime(ms(e.estimatedStart), await s.startedAt(id));
  });

  it("ramp: after a resume, the claims it allows now and when the next is due", async () => {
    const s = await explainSetup();
    // 600 per minute ramped over 60 s: one claim at the start, the next sqrt(2·60000·1/0.01) ≈ 3464 ms in.
    await s.admin.ensureQueue({
      queue: s.queue,
      profile: { claim_rate_per_minute: 600, claim_burst: 10, ramp_seconds: 60 },
    });
    await s.admin.pauseQueue({ queue: s.queue });
    await s.worker();
    const firstId = await s.enqueue();
    const id = await s.enqueue();
    const settings = await s.admin.resumeQueue({ queue: s.queue });
    const rampStart = ms(settings.queue?.rampStartedAt);
    await s.startedAt(firstId);
    const e = await s.explain(id);
    expect(e.firstBlocking).toBe("ramp");
    const r = reasonOf(e, "ramp");
    expect(r).toMatchObject({ blocking: true, verdict: ThrottleReason.RAMPING });
    expect(r.figures).toMatchObject({ ramp_seconds: 60, claims_now: 0 });
    expect(Date.parse(String(r.figures?.started_at))).toBe(rampStart);
    const next = Date.parse(String(r.figures?.next_at));
    expect(Math.abs(next - (rampStart + 3464))).toBeLessThanOrEqual(50);
    expectOnTime(ms(e.estimatedStart), await s.startedAt(id));
  });

  it("flow key: its limit and when its next token comes", async () => {
    const s = await explainSetup();
    const key = `${s.queue}-tenant`;
    await s.admin.setFlowLimit({ flowKey: key, ratePerMinute: 20, burst: 1 });
    await s.worker();
    const first = await s.startedAt(await s.enqueue({ flowKey: key }));
    const id = await s.enqueue({ flowKey: key });
    // A claim picks the job before its key is metered (gate 7) and puts it back when the key has no
    // token: for that moment it is running. Asked again, it is waiting.
    let e = await s.explain(id);
    for (let i = 0; i < 20 && e.state !== JobState.QUEUED; i++) e = await s.explain(id);
    expect(e.firstBlocking).toBe("flow_key");
    const r = reasonOf(e, "flow_key");
    expect(r).toMatchObject({ blocking: true, verdict: ThrottleReason.FLOW_KEY });
    expect(r.figures).toMatchObject({ flow_key: key, rate_per_minute: 20, burst: 1, tokens_now: 0 });
    // The key's token is taken after the pick (gate 7), a moment after started_at.
    const next = Date.parse(String(r.figures?.next_token_at));
    expect(next - first).toBeGreaterThan(2800);
    expect(next - first).toBeLessThanOrEqual(3100);
    expectOnTime(ms(e.estimatedStart), await s.startedAt(id));
  });
});
