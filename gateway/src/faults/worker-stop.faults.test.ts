// A worker stopped (SIGSTOP) past its lease, then resumed: the job went to another worker meanwhile;
// the resumed holder's settle and heartbeats are refused (LEASE_LOST) and nothing it sends is written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, type GrpcStubs, grpcStubs } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";
import { enqueueJobs, judge, scenarioQueue, waitForDrain } from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import { readStoredJobs } from "./stored-jobs.js";
import { FAULT_TOKEN } from "./token.js";
import { type LoggingWorkerOptions, startWorkerChild, type WorkerChild } from "./worker-child.js";

const LEASE_MS = 2000;

/** Resolves once `w` has logged its first claim. */
async function firstClaim(w: WorkerChild): Promise<{ job: string; attempt: number }> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const claim = w.events.find((e) => e.kind === "claimed");
    if (claim) return claim;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error("no claim within 30 s");
}

describe.skipIf(!haveService("postgres") || !haveService("redis"))("a worker stopped past its lease", () => {
  let env: FaultEnv;
  let gateway: GatewayChild;
  let stubs: GrpcStubs;
  const workers: WorkerChild[] = [];
  beforeAll(async () => {
    env = await startFaultEnv();
    gateway = await startGatewayChild({ ...env.gateway });
    stubs = grpcStubs(gateway.grpcUrl, FAULT_TOKEN);
  });
  afterAll(async () => {
    stubs?.close();
    await Promise.all(workers.map((w) => w.stop()));
    await gateway?.child.stop();
    await env?.close();
  });

  it("has its settle and heartbeats refused once resumed, and writes nothing", async () => {
    const queue = scenarioQueue("worker-stop");
    const base = { urls: [gateway.grpcUrl], queue, workers: 1, concurrency: 1, leaseMs: LEASE_MS };
    const start = async (opts: Omit<LoggingWorkerOptions, keyof typeof base>) => {
      const w = await startWorkerChild({ ...base, ...opts });
      workers.push(w);
      return w;
    };
    // One stopped holder finishes its work as soon as it resumes (so it settles); the other is still
    // working when it resumes (so its next heartbeat is what learns the lease is gone).
    const [first, second] = await enqueueJobs(gateway.grpcUrl, queue, 2);
    const settler = await start({ name: "settler", workMs: [600, 600] });
    const settlerLease = await firstClaim(settler);
    settler.child.signal("SIGSTOP");
    const beater = await start({ name: "beater", workMs: [9000, 9000] });
    const beaterLease = await firstClaim(beater);
    beater.child.signal("SIGSTOP");
    expect([settlerLease, beaterLease]).toMatchObject([
      { job: first, attempt: 1 },
      { job: second, attempt: 1 },
    ]);

    const rescuer = await start({ name: "rescuer", workMs: [50, 50] });
    const counts = await waitForDrain(env.databaseUrl, queue, 2, 30_000);
    expect(counts).toEqual({ succeeded: 2 });
    const stored = await readStoredJobs(env.databaseUrl, queue);

    settler.child.signal("SIGCONT");
    beater.child.signal("SIGCONT");
    // The settler's settle goes out at once; the beater's overdue heartbeat too, and its handler runs on
    // (it ignores the abort) until its work is done, when the SDK drops the result of a lost lease.
    const until = Date.now() + 15_000;
    while (!beater.events.some((e) => e.kind === "completed") && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 500));
    await Promise.all([settler.stop(), beater.stop()]);
    const settlerSnap = settler.snapshots.get("settler.0");
    const beaterSnap = beater.snapshots.get("beater.0");

    // A raw settle and heartbeat with the superseded lease, as a worker in any language would send.
    const settle = duplex(stubs.worker, "Settle");
    const lateSettle = await settle.send({
      settlements: [
        { lease: { job_id: first, attempt: 1 }, success: { result: Buffer.from('{"attempt":1}') } },
      ],
    });
    settle.end();
    const beat = duplex(stubs.worker, "Heartbeat");
    const lateBeat = await beat.send({ leases: [{ job_id: second, attempt: 1 }] });
    beat.end();

    const report = await judge(
      "worker SIGSTOP past its lease",
      env.databaseUrl,
      queue,
      [first, second] as string[],
      [settler, beater, rescuer],
    );
    console.log(
      `[faults] worker SIGSTOP: settler ${JSON.stringify({ succeeded: settlerSnap?.succeeded, settleRefused: settlerSnap?.settleRefused, leaseLost: settlerSnap?.leaseLost })}, beater ${JSON.stringify({ succeeded: beaterSnap?.succeeded, leaseLost: beaterSnap?.leaseLost, aborted: beater.aborted.map((a) => a.reason) })}; raw late settle ${lateSettle.results[0].status}, raw late heartbeat ${lateBeat.leases[0].state}`,
    );
    expect(report).toMatchObject({ ok: true, settledOnce: 2, redelivered: 2 });
    // Both stopped holders did try, and the gateway refused them.
    expect(settler.events.some((e) => e.kind === "completed" && e.attempt === 1)).toBe(true);
    expect(settlerSnap).toMatchObject({ succeeded: 0, settleRefused: 1, leaseLost: 1 });
    expect(beaterSnap).toMatchObject({ succeeded: 0, settleRefused: 0, leaseLost: 1 });
    expect(beater.aborted).toEqual([expect.objectContaining({ job: second, attempt: 1 })]);
    expect(lateSettle.results[0].status).toBe("SETTLE_STATUS_LEASE_LOST");
    expect(lateBeat.leases[0].state).toBe("LEASE_STATE_LEASE_LOST");
    // 0 stale writes: the store is what the rescuer's attempt 2 left.
    expect(await readStoredJobs(env.databaseUrl, queue)).toEqual(stored);
    expect(stored.map((s) => [s.attempt, s.resultAttempt])).toEqual([
      [2, 2],
      [2, 2],
    ]);
  });
});
