import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, type GrpcStubs, grpcStubs, seconds, unary } from "../testing/grpc-stubs.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const INVALID_ARGUMENT = 3;

/** One bad request per row: the RPC, the request, and the field the error must name. */
const oversize = Buffer.alloc(1024 * 1024 + 1);
const unaryCases: [method: "producer" | "worker", rpc: string, req: object, field: string][] = [
  ["producer", "Enqueue", {}, "job"],
  ["producer", "Enqueue", { job: { queue: "" } }, "job.queue"],
  ["producer", "Enqueue", { job: { queue: "bad name!" } }, "job.queue"],
  ["producer", "Enqueue", { job: { queue: "x".repeat(129) } }, "job.queue"],
  ["producer", "Enqueue", { job: { queue: "q", payload: "oversize" } }, "job.payload"],
  ["producer", "Enqueue", { job: { queue: "q", priority: -40000 } }, "job.priority"],
  ["producer", "Enqueue", { job: { queue: "q", priority: 40000 } }, "job.priority"],
  ["producer", "Enqueue", { job: { queue: "q", delay: { seconds: "-5", nanos: 0 } } }, "job.delay"],
  ["producer", "Enqueue", { job: { queue: "q", max_attempts: 5000 } }, "job.max_attempts"],
  ["producer", "Enqueue", { job: { queue: "q", flow_key: "k".repeat(256) } }, "job.flow_key"],
  // Postgres text cannot hold NUL: refused up front, not answered INTERNAL by the store (found by fuzzing).
  ["producer", "Enqueue", { job: { queue: "q", flow_key: "a\u0000b" } }, "job.flow_key"],
  [
    "producer",
    "Enqueue",
    { job: { queue: "q", run_at: { seconds: "-99999999999", nanos: 0 } } },
    "job.run_at",
  ],
  ["producer", "EnqueueBatch", { jobs: [] }, "jobs"],
  ["producer", "EnqueueBatch", { jobs: [{ queue: "ok" }, { queue: "no way" }] }, "jobs[1].queue"],
  ["producer", "GetJob", { job_id: "abc" }, "job_id"],
  ["producer", "GetJob", { job_id: "-1" }, "job_id"],
  ["producer", "CancelJob", { job_id: "99999999999999999999" }, "job_id"],
  ["worker", "ClaimOnce", { queues: [], max_jobs: 1 }, "queues"],
  ["worker", "ClaimOnce", { queues: ["ok", "b@d"], max_jobs: 1 }, "queues[1]"],
  ["worker", "ClaimOnce", { queues: ["ok"], max_jobs: 0 }, "max_jobs"],
  ["worker", "ClaimOnce", { queues: ["ok"], max_jobs: 1001 }, "max_jobs"],
  ["worker", "ClaimOnce", { queues: ["ok"], max_jobs: 1, max_wait: { seconds: "-1", nanos: 0 } }, "max_wait"],
  ["worker", "ClaimOnce", { queues: ["ok"], max_jobs: 1, max_wait: seconds(61) }, "max_wait"],
  ["worker", "ClaimOnce", { queues: ["ok"], max_jobs: 1, lease_duration: seconds(7200) }, "lease_duration"],
];

const streamCases: [rpc: string, req: object, field: string][] = [
  ["Settle", { settlements: [] }, "settlements"],
  ["Settle", { settlements: [{ success: {} }] }, "settlements[0].lease"],
  [
    "Settle",
    { settlements: [{ lease: { job_id: "x", attempt: 1 }, success: {} }] },
    "settlements[0].lease.job_id",
  ],
  [
    "Settle",
    { settlements: [{ lease: { job_id: "1", attempt: 0 }, success: {} }] },
    "settlements[0].lease.attempt",
  ],
  ["Settle", { settlements: [{ lease: { job_id: "1", attempt: 1 } }] }, "settlements[0].outcome"],
  [
    "Settle",
    {
      settlements: [
        {
          lease: { job_id: "1", attempt: 1 },
          failure: { retryable: true, retry_after: { seconds: "-3", nanos: 0 } },
        },
      ],
    },
    "settlements[0].failure.retry_after",
  ],
  [
    "Settle",
    { settlements: [{ lease: { job_id: "1", attempt: 1 }, failure: { type: "x\u0000", message: "m" } }] },
    "settlements[0].failure.type",
  ],
  ["Heartbeat", { leases: [] }, "leases"],
  [
    "Heartbeat",
    { leases: [{ job_id: "1", attempt: 1 }], extend_by: { seconds: "-1", nanos: 0 } },
    "extend_by",
  ],
  ["Heartbeat", { leases: [{ job_id: "0", attempt: 1 }] }, "leases[0].job_id"],
  ["Claim", { queues: ["a b"], max_jobs: 1 }, "queues[0]"],
];

describe("bad input is refused with INVALID_ARGUMENT naming the field, and writes nothing", () => {
  let gw: TestGateway;
  let stubs: GrpcStubs;
  const jobCount = async () =>
    Number(
      (
        await gw.store.db.query<{ n: number }>({
          name: "",
          text: "select count(*)::int as n from taskq.jobs",
        })
      )[0]?.n,
    );

  beforeAll(async () => {
    gw = await startTestGateway();
    stubs = grpcStubs(gw.grpcUrl);
  });
  afterAll(async () => {
    stubs.close();
    await gw.stop();
  });

  it.each(unaryCases)("%s.%s %j -> %s", async (service, rpc, req, field) => {
    // The oversize payload is named in the table and built here, to keep test names short.
    const body = JSON.parse(JSON.stringify(req), (k, v) =>
      k === "payload" && v === "oversize" ? oversize : v,
    );
    const err = await unary(stubs[service], rpc, body).then(
      () => null,
      (e) => e,
    );
    expect(err?.code).toBe(INVALID_ARGUMENT);
    expect(err?.details).toMatch(new RegExp(`^${field.replace(/[[\].]/g, "\\$&")} (must|is) `));
  });

  it.each(streamCases)("%s %j -> %s", async (rpc, req, field) => {
    const call = duplex(stubs.worker, rpc);
    const err = await call.send(req).then(
      () => null,
      (e) => e,
    );
    expect(err?.code).toBe(INVALID_ARGUMENT);
    expect(err?.details).toMatch(new RegExp(`^${field.replace(/[[\].]/g, "\\$&")} (must|is) `));
  });

  it("refuses bad Connect JSON (negative unsigned, unknown field) with invalid_argument", async () => {
    for (const body of [
      { job: { queue: "q", ttlSeconds: -1 } },
      { job: { queue: "q", maxAttempts: "lots" } },
      { job: { queue: "q", nonsense: true } },
    ]) {
      const res = await fetch(`${gw.httpUrl}/taskq.v1.ProducerService/Enqueue`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
    }
  });

  it("wrote nothing and still serves", async () => {
    expect(await jobCount()).toBe(0);
    const ok = await unary(stubs.producer, "Enqueue", { job: { queue: "fine" } });
    expect(ok.job_id).toMatch(/^\d+$/);
    expect(await jobCount()).toBe(1);
  });
});
