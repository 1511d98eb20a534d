import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, JobState, ProducerService, WorkerService } from "@taskq/sdk/proto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// Every numeric input, whatever its size: accepted, or refused as INVALID_ARGUMENT / 400 naming the
// field. Never INTERNAL / 500 (numbers from 2^31 up used to reach Postgres's ::int cast).
const UINT32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const UINT64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const INT32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
/** Around the int4/int8 edges, where the bugs were, as well as anywhere. */
const EDGY32 = fc.oneof(UINT32, fc.constantFrom(0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1));
const EDGY64 = fc.oneof(UINT64, fc.constantFrom(0n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n));
const RUNS = { numRuns: 25 };

// Gateways on Postgres share the test Redis for their limiters.
const services = haveService("postgres") && haveService("redis");

describe.skipIf(!services)("numeric inputs (REST, RPC) over the whole range", () => {
  let gw: TestGateway;
  let admin: ReturnType<typeof createClient<typeof AdminService>>;
  let producer: ReturnType<typeof createClient<typeof ProducerService>>;
  let worker: ReturnType<typeof createClient<typeof WorkerService>>;
  beforeAll(async () => {
    gw = await startTestGateway({ engine: "postgres" });
    const t = createTransport({ baseUrl: gw.grpcUrl });
    admin = createClient(AdminService, t);
    producer = createClient(ProducerService, t);
    worker = createClient(WorkerService, t);
  });
  afterAll(() => gw?.stop());

  /** Resolves when `call` succeeds or is refused as INVALID_ARGUMENT naming one of `fields`. */
  const acceptedOrNamed = async (fields: string[], call: () => Promise<unknown>) => {
    try {
      await call();
    } catch (err) {
      const e = ConnectError.from(err);
      expect(Code[e.code], e.rawMessage).toBe("InvalidArgument");
      expect(
        fields.some((f) => e.rawMessage.includes(f)),
        e.rawMessage,
      ).toBe(true);
    }
  };

  const rpcCases: [string, fc.Arbitrary<unknown[]>, (q: string, ...a: never[]) => Promise<unknown>][] = [
    [
      "limit period_ms",
      fc.tuple(EDGY32, EDGY32),
      (q, l: number, p: number) => admin.setQueueThrottle({ queue: q, limit: l, periodMs: p }),
    ],
    [
      "max_running",
      fc.tuple(EDGY32),
      (q, n: number) => admin.setQueueConcurrency({ queue: q, maxRunning: n }),
    ],
    [
      "rate_per_minute burst",
      fc.tuple(EDGY32, EDGY32),
      (_q, r: number, b: number) => admin.setFlowLimit({ flowKey: "k", ratePerMinute: r, burst: b }),
    ],
    [
      "aging_seconds",
      fc.tuple(EDGY32),
      (q, n: number) => admin.setPriorityAging({ queue: q, agingSeconds: n }),
    ],
    [
      "failure_threshold cooldown_seconds half_open_successes",
      fc.tuple(EDGY32, EDGY32, EDGY32),
      (q, a: number, b: number, c: number) =>
        admin.setBreakerConfig({ queue: q, failureThreshold: a, cooldownSeconds: b, halfOpenSuccesses: c }),
    ],
    [
      "failure_ratio window_seconds min_volume",
      fc.tuple(fc.double(), EDGY32, EDGY32),
      (q, r: number, w: number, m: number) =>
        admin.setBreakerRate({ queue: q, failureRatio: r, windowSeconds: w, minVolume: m }),
    ],
    [
      "threshold_ms window_seconds min_volume",
      fc.tuple(EDGY32, EDGY32, EDGY32),
      (q, t: number, w: number, m: number) =>
        admin.setBreakerLatency({ queue: q, thresholdMs: t, windowSeconds: w, minVolume: m }),
    ],
    [
      "limit before_id",
      fc.tuple(EDGY32, EDGY64),
      (q, l: number, b: bigint) => admin.listQueueAudit({ queue: q, limit: l, beforeId: b }),
    ],
    ["older_than_hours", fc.tuple(EDGY32), (_q, h: number) => admin.pruneQueueAudit({ olderThanHours: h })],
    [
      "limit smear_seconds",
      fc.tuple(EDGY32, EDGY32),
      (q, l: number, s: number) => admin.redriveFailed({ queue: q, limit: l, smearSeconds: s }),
    ],
    [
      "limit before_id",
      fc.tuple(EDGY32, EDGY64),
      (q, l: number, b: bigint) =>
        admin.listJobs({ queue: q, state: JobState.QUEUED, limit: l, beforeId: b }),
    ],
    ["job_id", fc.tuple(EDGY64), (_q, id: bigint) => admin.listJobEvents({ jobId: id.toString() })],
    ["limit", fc.tuple(EDGY32), (q, l: number) => admin.listBreakerEvents({ queue: q, limit: l })],
    ["minutes", fc.tuple(EDGY32), (q, m: number) => admin.queueActivity({ queue: q, minutes: m })],
    [
      "profile.",
      fc.tuple(
        fc.constantFrom(
          "max_running",
          "claim_rate_per_minute",
          "ramp_seconds",
          "priority_aging_seconds",
          "default_ttl_seconds",
        ),
        fc.double(),
      ),
      (q, k: string, n: number) => admin.ensureQueue({ queue: q, profile: { [k]: n } }),
    ],
    [
      "priority max_attempts ttl_seconds",
      fc.tuple(INT32, EDGY32, EDGY32),
      (q, p: number, m: number, t: number) =>
        producer.enqueue({ job: { queue: q, priority: p, maxAttempts: m, ttlSeconds: t } }),
    ],
    [
      "max_jobs",
      fc.tuple(EDGY32),
      (q, n: number) => worker.claimOnce({ queues: [q], maxJobs: n, maxWait: { seconds: 0n, nanos: 0 } }),
    ],
  ];

  for (const [fields, args, call] of rpcCases) {
    it(`RPC ${fields}`, async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(args, async (a) => {
          // A verb refuses a queue never seen: each case gets a queue that exists.
          const q = `num-${++n}`;
          await admin.ensureQueue({ queue: q });
          // The rate and latency trips refuse a queue whose breaker is off, whatever the numbers.
          if (fields.includes("window_seconds"))
            await admin.setBreakerConfig({ queue: q, failureThreshold: 5, cooldownSeconds: 30 });
          await acceptedOrNamed(fields.split(" "), () => call(q, ...(a as never[])));
        }),
        RUNS,
      );
    });
  }

  /** Any JSON value a client might send where a number belongs. */
  const ANY_JSON = fc.oneof(
    EDGY32,
    fc.double(),
    fc.constantFrom(2 ** 53, 1e20, -1, -(2 ** 31) - 1, 1.5),
    fc.string(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer(), { maxLength: 2 }),
  );

  const rest = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${gw.httpUrl}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { error?: { message?: string } } };
  };

  it("REST PUT throttle {limit, period_ms}", async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(ANY_JSON, ANY_JSON, async (limit, period) => {
        const q = `rest-t-${++n}`;
        await admin.ensureQueue({ queue: q });
        const r = await rest("PUT", `/api/v1/queues/${q}/throttle`, { limit, period_ms: period });
        expect([200, 400], JSON.stringify(r.body)).toContain(r.status);
        if (r.status === 400) expect(r.body.error?.message).toMatch(/limit|period_ms/);
      }),
      RUNS,
    );
  });

  it("REST PUT concurrency", async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(ANY_JSON, async (value) => {
        const q = `rest-c-${++n}`;
        await admin.ensureQueue({ queue: q });
        const r = await rest("PUT", `/api/v1/queues/${q}/concurrency`, { concurrency: value });
        expect([200, 400], JSON.stringify(r.body)).toContain(r.status);
        if (r.status === 400) expect(r.body.error?.message).toMatch(/concurrency|max_running/);
      }),
      RUNS,
    );
  });
});
