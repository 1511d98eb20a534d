import { randomBytes } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService, testRedis } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// DryRunLimit and REST ?dry_run=true on a real gateway (Postgres and Redis): the report of a change
// over recorded history, the verb's own validation, and nothing written anywhere.
describe.skipIf(!haveService("postgres") || !haveService("redis"))("DryRunLimit", () => {
  let gateway: TestGateway;
  let redis: Redis;
  const prefix = `dryrun-${randomBytes(4).toString("hex")}:`;
  const admin = () => createClient(AdminService, createTransport({ baseUrl: gateway.grpcUrl }));
  const sql = <T extends object = Record<string, unknown>>(text: string, values: unknown[] = []) =>
    gateway.store.db.query<T>({ name: "", text }, values);
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => null,
      (e: unknown) => ({ code: ConnectError.from(e).code, message: ConnectError.from(e).rawMessage }),
    );
  /** Everything a dry run must leave alone: settings, audit, flow limits, the queue's Redis keys. */
  const snapshot = async (q: string) => ({
    settings: await sql("select * from taskq.queues where name = $1", [q]),
    audit: await sql("select count(*)::int as n from taskq.queue_audit"),
    flowLimits: await sql("select * from taskq.flow_limits order by flow_key"),
    redis: (await redis.keys(`${prefix}*`)).sort(),
  });

  beforeAll(async () => {
    gateway = await startTestGateway({ engine: "postgres", config: { redisPrefix: prefix } });
    redis = testRedis();
    // 30 jobs of 2 s each, 10 minutes ago, ten a second over 3 s, all started at once.
    await sql("select taskq.note_queues($1::text[])", [["mail"]]);
    await sql(
      `insert into taskq.jobs (queue, state, payload, max_attempts, attempt, run_at, enqueued_at, started_at,
         finished_at, flow_key)
       select 'mail', 'succeeded', '', 5, 1, t, t, t, t + interval '2 s', case when i % 3 = 0 then 'acme' end
       from (select i, now() - interval '10 min' + i * interval '100 ms' as t from generate_series(0, 29) i) s`,
    );
  });
  afterAll(async () => {
    redis?.disconnect();
    await gateway?.stop();
  });

  it("reports what a lower cap would have done, as the RPC and as REST ?dry_run=true, writing nothing", async () => {
    const a = admin();
    await a.setQueueThrottle({ queue: "mail", limit: 100_000, periodMs: 1000 });
    await a.setQueueConcurrency({ queue: "mail", maxRunning: 100 });
    const before = await snapshot("mail");
    const r = await a.dryRunLimit({
      change: { case: "maxRunning", value: { queue: "mail", maxRunning: 10 } },
    });
    // 20 jobs ran at once (2 s each, 10 a second); a cap of 10 makes the 11th to 30th wait.
    expect(r).toMatchObject({ queue: "mail", jobs: 30, truncated: false, workers: 20, minDelayMs: 1000 });
    expect(r.delayed).toBeGreaterThanOrEqual(15);
    expect(r.delayed).toBeLessThanOrEqual(20);
    expect(r.longestExtraWaitMs).toBeGreaterThan(1000);
    expect(r.current?.limits?.maxRunning).toBe(100);
    expect(r.proposed?.limits).toMatchObject({
      maxRunning: 10,
      throttle: { limit: 100_000, periodMs: 1000 },
    });
    expect(r.proposed?.peakBacklog).toBeGreaterThan(r.current?.peakBacklog ?? 0);
    const windowMs = Number((r.windowEnd?.seconds ?? 0n) - (r.windowStart?.seconds ?? 0n)) * 1000;
    expect(windowMs).toBe(3_600_000);

    const res = await fetch(
      `${gateway.httpUrl}/api/v1/queues/mail/concurrency?dry_run=true&window_seconds=1800`,
      {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ concurrency: 10 }),
      },
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { queue: string; dry_run: Record<string, unknown> };
    expect(body.queue).toBe("mail");
    expect(body.dry_run).toMatchObject({
      jobs: 30,
      delayed: r.delayed,
      longest_extra_wait_ms: r.longestExtraWaitMs,
    });
    expect(await snapshot("mail")).toEqual(before);
  });

  it("replays a throttle, a claim rate and a flow-key limit, touching no limiter key", async () => {
    const a = admin();
    const before = await snapshot("mail");
    const t = await a.dryRunLimit({
      change: { case: "throttle", value: { queue: "mail", limit: 1, periodMs: 1000 } },
    });
    expect(t.delayed).toBeGreaterThan(20);
    const c = await a.dryRunLimit({
      change: {
        case: "profile",
        value: { queue: "mail", profile: { claim_rate_per_minute: 60, claim_burst: 10 } },
      },
    });
    expect(c.proposed?.limits).toMatchObject({ claimRatePerMinute: 60, claimBurst: 10 });
    expect(c.delayed).toBeGreaterThan(10);
    const f = await a.dryRunLimit({
      queue: "mail",
      change: { case: "flowLimit", value: { flowKey: "acme", ratePerMinute: 60 } },
    });
    // Only acme's 10 jobs are held back: one a second after the first.
    expect(f.proposed?.limits?.flowLimit).toMatchObject({ flowKey: "acme", ratePerMinute: 60, burst: 1 });
    expect(f.current?.limits?.flowLimit).toBeUndefined();
    expect(f.delayed).toBeGreaterThanOrEqual(7);
    expect(f.delayed).toBeLessThanOrEqual(9);
    // Adaptive from min 1: the limit starts lower than the queue's history ran, so jobs wait.
    const ad = await a.dryRunLimit({
      change: { case: "adaptive", value: { queue: "mail", min: 1, max: 10, targetLatencyMs: 100 } },
    });
    expect(ad.proposed?.limits?.adaptive).toMatchObject({ min: 1, max: 10, targetLatencyMs: 100 });
    expect(ad.proposed?.limits?.maxRunning).toBeUndefined();
    expect(ad.current?.limits?.adaptive).toBeUndefined();
    expect(await snapshot("mail")).toEqual(before);
  });

  it("refuses what the verb refuses, with the same code and message", async () => {
    const a = admin();
    const before = await snapshot("mail");
    const pairs: [() => Promise<unknown>, () => Promise<unknown>][] = [
      [
        () =>
          a.dryRunLimit({ change: { case: "throttle", value: { queue: "mail", limit: 10, periodMs: 999 } } }),
        () => a.setQueueThrottle({ queue: "mail", limit: 10, periodMs: 999 }),
      ],
      [
        () => a.dryRunLimit({ change: { case: "maxRunning", value: { queue: "mail", maxRunning: 0 } } }),
        () => a.setQueueConcurrency({ queue: "mail", maxRunning: 0 }),
      ],
      [
        () =>
          a.dryRunLimit({
            change: { case: "adaptive", value: { queue: "mail", min: 5, max: 2, targetLatencyMs: 500 } },
          }),
        () => a.setAdaptiveConcurrency({ queue: "mail", min: 5, max: 2, targetLatencyMs: 500 }),
      ],
      [
        () => a.dryRunLimit({ change: { case: "maxRunning", value: { queue: "no such!", maxRunning: 1 } } }),
        () => a.setQueueConcurrency({ queue: "no such!", maxRunning: 1 }),
      ],
      [
        () =>
          a.dryRunLimit({
            change: { case: "profile", value: { queue: "mail", profile: { claim_burst: 3 } } },
          }),
        () => a.ensureQueue({ queue: "mail", profile: { claim_burst: 3 } }),
      ],
      [
        () =>
          a.dryRunLimit({
            queue: "mail",
            change: { case: "flowLimit", value: { flowKey: "acme", ratePerMinute: 0 } },
          }),
        () => a.setFlowLimit({ flowKey: "acme", ratePerMinute: 0 }),
      ],
    ];
    for (const [dry, real] of pairs) {
      const [d, r] = [await failure(dry()), await failure(real())];
      expect(d).not.toBeNull();
      expect(d).toEqual(r);
    }
    expect(await failure(a.dryRunLimit({}))).toMatchObject({
      code: Code.InvalidArgument,
      message: /^change /,
    });
    expect(
      await failure(
        a.dryRunLimit({ change: { case: "flowLimit", value: { flowKey: "acme", ratePerMinute: 5 } } }),
      ),
    ).toMatchObject({ code: Code.InvalidArgument, message: /^queue / });
    expect(
      await failure(
        a.dryRunLimit({
          windowSeconds: 100_000,
          change: { case: "maxRunning", value: { queue: "mail", maxRunning: 1 } },
        }),
      ),
    ).toMatchObject({
      code: Code.InvalidArgument,
      message: "window_seconds must be from 60 to 86400 (got 100000)",
    });
    const rest = await fetch(`${gateway.httpUrl}/api/v1/queues/mail/throttle?dry_run=true`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ limit: 0, period_ms: 1000 }),
    });
    expect(rest.status).toBe(400);
    expect(((await rest.json()) as { error: { message: string } }).error.message).toMatch(/^limit /);
    for (const [method, path, message] of [
      ["PUT", "concurrency?dry_run=maybe", "dry_run must be true or false"],
      [
        "POST",
        "pause?dry_run=true",
        "dry_run applies to PUT concurrency, PUT adaptive and PUT throttle only",
      ],
      [
        "PUT",
        "concurrency?dry_run=true&window_seconds=1h",
        'window_seconds must be a whole number (got "1h")',
      ],
    ] as const) {
      const r = await fetch(`${gateway.httpUrl}/api/v1/queues/mail/${path}`, {
        method,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ concurrency: 2 }),
      });
      expect([r.status, ((await r.json()) as { error: { message: string } }).error.message]).toEqual([
        400,
        message,
      ]);
    }
    expect(await snapshot("mail")).toEqual(before);
  });
});
