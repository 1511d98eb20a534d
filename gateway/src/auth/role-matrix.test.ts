import * as grpc from "@grpc/grpc-js";
import { AdminService, ProducerService, WorkerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, type GrpcStubs, grpcStubs, unary } from "../testing/grpc-stubs.js";
import { newJob } from "../testing/new-job.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { hashToken, newToken } from "./tokens.js";

// The role matrix as the operator guide states it, written out here rather than read from roles.ts, so
// a change to who may do what fails this test until the guide (and this table) agree.
// o operator, v observer, h housekeeper, w worker, p producer.
const expected: Record<string, string> = {
  "AdminService.EnsureQueue": "o",
  "AdminService.GetQueue": "ov",
  "AdminService.ListQueues": "ov",
  "AdminService.PauseQueue": "o",
  "AdminService.ResumeQueue": "o",
  "AdminService.ClearQueue": "o",
  "AdminService.SetQueueConcurrency": "o",
  "AdminService.SetAdaptiveConcurrency": "o",
  "AdminService.ListAdaptiveChanges": "ov",
  "AdminService.SetQueueThrottle": "o",
  "AdminService.DeleteQueueThrottle": "o",
  "AdminService.SetFlowLimit": "o",
  "AdminService.ListFlowLimits": "ov",
  "AdminService.SetPriorityAging": "o",
  "AdminService.SetBreakerConfig": "o",
  "AdminService.SetBreakerRate": "o",
  "AdminService.SetBreakerLatency": "o",
  "AdminService.TripBreaker": "o",
  "AdminService.CloseBreaker": "o",
  "AdminService.ListQueueAudit": "ov",
  "AdminService.PruneQueueAudit": "oh",
  "AdminService.QueueHealth": "ov",
  "AdminService.QueueCounters": "ov",
  "AdminService.QueueFlow": "ov",
  "AdminService.RedriveFailed": "o",
  "AdminService.RetryJob": "o",
  "AdminService.CreateSchedule": "o",
  "AdminService.UpdateSchedule": "o",
  "AdminService.GetSchedule": "ov",
  "AdminService.ListSchedules": "ov",
  "AdminService.PauseSchedule": "o",
  "AdminService.ResumeSchedule": "o",
  "AdminService.SetScheduleSmear": "o",
  "AdminService.DeleteSchedule": "o",
  "AdminService.WhoAmI": "ovhwp",
  "AdminService.ListJobs": "ov",
  "AdminService.ListJobEvents": "ov",
  "AdminService.ListBreakerEvents": "ov",
  "AdminService.QueueActivity": "ov",
  "AdminService.ListWorkers": "ov",
  "AdminService.ExplainJob": "ov",
  "AdminService.ExplainQueue": "ov",
  "AdminService.DryRunLimit": "ov",
  "ProducerService.Enqueue": "op",
  "ProducerService.EnqueueBatch": "op",
  "ProducerService.EnqueueStream": "op",
  "ProducerService.GetJob": "ovp",
  "ProducerService.CancelJob": "op",
  "WorkerService.Claim": "w",
  "WorkerService.ClaimOnce": "w",
  "WorkerService.Settle": "w",
  "WorkerService.Heartbeat": "w",
};

const Q = "matrix";
const roles = { o: "operator", v: "observer", h: "housekeeper", w: "worker", p: "producer" } as const;
const secrets = Object.fromEntries(Object.values(roles).map((r) => [r, newToken()])) as Record<
  string,
  string
>;
const tokens = Object.values(roles).map((role) => ({
  name: `t-${role}`,
  roles: [role],
  queues: null,
  sha256: hashToken(secrets[role] ?? ""),
}));
/** Callers: each role's token, no token, and a well-formed token the gateway does not know. */
const callers: [string, string | undefined][] = [
  ...Object.values(roles).map((r): [string, string] => [r, secrets[r] ?? ""]),
  ["no token", undefined],
  ["bad token", newToken()],
];

/** What each caller should get for a procedure: OK where the matrix allows, else the refusal. */
function expectedCode(procedure: string, caller: string): grpc.status {
  if (caller === "no token" || caller === "bad token") return grpc.status.UNAUTHENTICATED;
  const allowed = [...(expected[procedure] ?? "")].map((c) => roles[c as keyof typeof roles]);
  return allowed.includes(caller as never) ? grpc.status.OK : grpc.status.PERMISSION_DENIED;
}

describe("the role matrix", () => {
  let gw: TestGateway;
  let jobId: string;
  let failedJobId: string;
  const stubs = new Map<string, GrpcStubs>();

  beforeAll(async () => {
    gw = await startTestGateway({ config: { tokens } });
    for (const [caller, secret] of callers) stubs.set(caller, grpcStubs(gw.grpcUrl, secret));
    // In a queue of its own, so ClearQueue on Q leaves it for GetJob and CancelJob.
    const res = await unary(stubs.get("producer")?.producer, "Enqueue", { job: { queue: `${Q}-jobs` } });
    jobId = res.job_id;
    // A failed job for RetryJob, in a queue of its own too.
    const [failed] = await gw.store.jobsEnqueue([newJob(`${Q}-failed`, { maxAttempts: 1 })]);
    const [claimed] = await gw.store.jobsClaim({
      queues: [`${Q}-failed`],
      limit: 1,
      leaseMs: 60_000,
      workerId: "w",
    });
    if (!failed || !claimed) throw new Error("setup");
    await gw.store.jobsSettle([
      {
        jobId: claimed.id,
        attempt: claimed.attempt,
        kind: "failure",
        error: { type: "Boom", message: "down", retryable: false },
        delayMs: null,
      },
    ]);
    failedJobId = claimed.id;
  });
  afterAll(async () => {
    for (const s of stubs.values()) s.close();
    await gw?.stop();
  });

  const request = (method: string): object =>
    ({
      EnsureQueue: { queue: Q },
      GetQueue: { queue: Q },
      PauseQueue: { queue: Q },
      ResumeQueue: { queue: Q },
      ClearQueue: { queue: Q },
      SetQueueConcurrency: { queue: Q, max_running: 5 },
      SetAdaptiveConcurrency: { queue: Q, min: 2, max: 20, target_latency_ms: 500 },
      ListAdaptiveChanges: { queue: Q },
      SetQueueThrottle: { queue: Q, limit: 10, period_ms: 60_000 },
      DeleteQueueThrottle: { queue: Q },
      SetFlowLimit: { flow_key: "matrix-key", rate_per_minute: 60, burst: 1 },
      SetPriorityAging: { queue: Q, aging_seconds: 10 },
      SetBreakerConfig: { queue: Q, failure_threshold: 5, cooldown_seconds: 30, half_open_successes: 1 },
      SetBreakerRate: { queue: Q, failure_ratio: 0.5, window_seconds: 60, min_volume: 10 },
      SetBreakerLatency: { queue: Q, threshold_ms: 1000, window_seconds: 60, min_volume: 10 },
      TripBreaker: { queue: Q },
      CloseBreaker: { queue: Q },
      ListQueueAudit: { queue: Q },
      PruneQueueAudit: { older_than_hours: 1 },
      RedriveFailed: { queue: Q, limit: 10 },
      RetryJob: { job_id: failedJobId },
      CreateSchedule: { schedule: { name: Q, cron: "0 * * * *", queue: Q } },
      UpdateSchedule: { schedule: { name: Q, cron: "30 * * * *" } },
      GetSchedule: { name: Q },
      PauseSchedule: { name: Q },
      ResumeSchedule: { name: Q },
      SetScheduleSmear: { name: Q, smear_seconds: 60 },
      DeleteSchedule: { name: Q },
      ListJobs: { queue: Q, state: "JOB_STATE_FAILED" },
      ListJobEvents: { job_id: jobId },
      ListBreakerEvents: { queue: Q },
      QueueActivity: { queue: Q },
      ExplainJob: { job_id: jobId },
      ExplainQueue: { queue: Q },
      DryRunLimit: { max_running: { queue: Q, max_running: 5 } },
      Enqueue: { job: { queue: Q } },
      EnqueueBatch: { jobs: [{ queue: Q }] },
      EnqueueStream: { jobs: [{ queue: Q }] },
      GetJob: { job_id: jobId },
      CancelJob: { job_id: jobId },
      Claim: { queues: [Q], max_jobs: 1 },
      ClaimOnce: { queues: [Q], max_jobs: 1 },
      Settle: { settlements: [{ lease: { job_id: "999999999", attempt: 1 }, success: {} }] },
      Heartbeat: { leases: [{ job_id: "999999999", attempt: 1 }] },
    })[method] ?? {};

  /** Calls the procedure through plain grpc-js and returns its status code. */
  async function callGrpc(caller: string, procedure: string): Promise<grpc.status> {
    const [service, method] = procedure.split(".") as [string, string];
    const s = stubs.get(caller);
    const client =
      service === "AdminService" ? s?.admin : service === "ProducerService" ? s?.producer : s?.worker;
    try {
      if (["Claim", "Settle", "Heartbeat", "EnqueueStream"].includes(method)) {
        const stream = duplex(client, method);
        await stream.send(request(method));
        stream.end();
      } else await unary(client, method, request(method));
      return grpc.status.OK;
    } catch (err) {
      return (err as grpc.ServiceError).code;
    }
  }

  it("covers every procedure of the three services", () => {
    const all = [AdminService, ProducerService, WorkerService].flatMap((s) =>
      s.methods.map((m) => `${s.name}.${m.name}`),
    );
    expect(Object.keys(expected).sort()).toEqual(all.sort());
  });

  for (const procedure of Object.keys(expected)) {
    it(`${procedure}: allowed for ${[...(expected[procedure] ?? "")].map((c) => roles[c as keyof typeof roles]).join(", ")} only`, async () => {
      const got: Record<string, string> = {};
      const want: Record<string, string> = {};
      for (const [caller] of callers) {
        got[caller] = grpc.status[await callGrpc(caller, procedure)];
        want[caller] = grpc.status[expectedCode(procedure, caller)];
      }
      expect(got).toEqual(want);
    });
  }

  const routes: [string, string, string, unknown?][] = [
    ["POST", "pause", "AdminService.PauseQueue"],
    ["POST", "resume", "AdminService.ResumeQueue"],
    ["POST", "clear", "AdminService.ClearQueue"],
    ["PUT", "concurrency", "AdminService.SetQueueConcurrency", { concurrency: 3 }],
    ["PUT", "adaptive", "AdminService.SetAdaptiveConcurrency", { min: 2, max: 20, target_latency_ms: 500 }],
    ["PUT", "throttle", "AdminService.SetQueueThrottle", { limit: 10, period_ms: 60_000 }],
    ["DELETE", "throttle", "AdminService.DeleteQueueThrottle"],
    ["PUT", "concurrency?dry_run=true", "AdminService.DryRunLimit", { concurrency: 3 }],
    ["PUT", "throttle?dry_run=true", "AdminService.DryRunLimit", { limit: 10, period_ms: 60_000 }],
  ];
  const httpStatus: Partial<Record<grpc.status, number>> = {
    [grpc.status.OK]: 200,
    [grpc.status.UNAUTHENTICATED]: 401,
    [grpc.status.PERMISSION_DENIED]: 403,
  };
  for (const [method, action, procedure, body] of routes) {
    it(`REST ${method} /api/v1/queues/:name/${action}: as ${procedure}`, async () => {
      const got: Record<string, number> = {};
      const want: Record<string, number | undefined> = {};
      for (const [caller, secret] of callers) {
        const res = await fetch(`${gw.httpUrl}/api/v1/queues/${Q}/${action}`, {
          method,
          headers: {
            "content-type": "application/json",
            ...(secret ? { authorization: `Bearer ${secret}` } : {}),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        got[caller] = res.status;
        want[caller] = httpStatus[expectedCode(procedure, caller)];
        if (res.status === 401) expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
        if (res.status !== 200) {
          const err = ((await res.json()) as { error: { code: string; message: string } }).error;
          expect(err.code).toBe(res.status === 401 ? "unauthenticated" : "permission_denied");
        } else await res.body?.cancel();
      }
      expect(got).toEqual(want);
    });
  }

  it("Connect JSON over HTTP/1.1 goes through the same check", async () => {
    const post = (secret: string | undefined) =>
      fetch(`${gw.httpUrl}/taskq.v1.AdminService/GetQueue`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(secret ? { authorization: `Bearer ${secret}` } : {}),
        },
        body: JSON.stringify({ queue: Q }),
      });
    expect((await post(secrets.observer)).status).toBe(200);
    const denied = await post(secrets.worker);
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { code: string }).code).toBe("permission_denied");
    expect((await post(undefined)).status).toBe(401);
  });

  it("audits only what was allowed, as the token's name", async () => {
    const rows = await gw.store.db.query<{ queue: string; actor: string; n: string }>(
      {
        name: "",
        text: "select queue, actor, count(*)::text as n from taskq.queue_audit group by queue, actor order by 1, 2",
      },
      [],
    );
    // Per queue-scoped verb one row from the operator's gRPC call (15 verbs, EnsureQueue and
    // RedriveFailed included) and one per REST route; the flow-limit verb logs under flow:<key>, the 6
    // schedule verbs under schedule:<name>, RetryJob under its job's queue. Nothing from refused calls,
    // nor from dry runs (allowed or not).
    expect(rows).toEqual([
      { queue: "flow:matrix-key", actor: "t-operator", n: "1" },
      {
        queue: Q,
        actor: "t-operator",
        n: String(15 + routes.filter(([, , procedure]) => procedure !== "AdminService.DryRunLimit").length),
      },
      { queue: `${Q}-failed`, actor: "t-operator", n: "1" },
      { queue: `schedule:${Q}`, actor: "t-operator", n: "6" },
    ]);
  });
});
