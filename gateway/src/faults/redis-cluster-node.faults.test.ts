// One node of a three-node Redis Cluster (no replicas, cluster-require-full-coverage no) killed under
// two gateways and restarted 10 s later. The claim rate of a queue whose limiter key lives on that
// node fails closed (RATE_LIMIT verdicts, nothing admitted) while it is down; a queue whose key lives
// on another node goes on at its rate; within 5 s of the restart the first queue claims again at its
// rate (the node came back empty: a rate key starts afresh), and no job of either is lost.
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalRedisCluster, type RedisNode, startRedisCluster } from "../testing/redis-cluster.js";
import { haveCommand, haveService } from "../testing/services.js";
import { busiestWindow } from "./claim-windows.js";
import { enqueueJobs, judge, scenarioQueue, waitForDrain } from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import { scrape } from "./scrape.js";
import { claimStartTimes } from "./stored-jobs.js";
import { FAULT_TOKEN } from "./token.js";
import { startWorkerChild, type WorkerChild } from "./worker-child.js";

const PER_SECOND = 10;
const JOBS = 200;
const DOWN_MS = 10_000;
/** Claims that took their admission just before the kill may start this much later. */
const IN_FLIGHT_MS = 500;
const RESUME_BOUND_MS = 5000;
const MOST_PER_SECOND = PER_SECOND + 2;

describe.skipIf(
  !haveService("postgres") || !haveService("redis") || !haveCommand("redis-server", "install redis-server"),
)("a Redis Cluster node killed and restarted", () => {
  let env: FaultEnv;
  let cluster: LocalRedisCluster;
  const gateways: GatewayChild[] = [];
  const workers = new Map<string, WorkerChild>();
  beforeAll(async () => {
    env = await startFaultEnv();
    cluster = await startRedisCluster({ fullCoverage: false });
    const opts = { ...env.gateway, redisUrl: cluster.url };
    gateways.push(...(await Promise.all([startGatewayChild(opts), startGatewayChild(opts)])));
  });
  afterAll(async () => {
    await Promise.all([...workers.values()].map((w) => w.stop()));
    await Promise.all(gateways.map((g) => g.child.stop()));
    await cluster?.stop();
    await env?.close();
  });

  it("fails closed on that node's slots only, resumes within 5 s of its restart, loses no job", {
    timeout: 180_000,
  }, async () => {
    const victim = cluster.nodes[0] as RedisNode;
    // A queue whose claim-rate key hashes to the victim, and one whose key hashes elsewhere.
    const pick = async (onVictim: boolean, name: string) => {
      for (;;) {
        const q = scenarioQueue(name);
        if (((await cluster.nodeOf(`{rate:queue:${q}}`)) === victim) === onVictim) return q;
      }
    };
    const q = { down: await pick(true, "cluster-down"), up: await pick(false, "cluster-up") };
    const admin = createClient(
      AdminService,
      createTransport({ baseUrl: gateways[0]?.grpcUrl ?? "", token: FAULT_TOKEN }),
    );
    const enqueued: Record<string, string[]> = {};
    for (const [name, queue] of Object.entries(q)) {
      await admin.ensureQueue({ queue, profile: { claim_rate_per_minute: PER_SECOND * 60, claim_burst: 1 } });
      enqueued[name] = await enqueueJobs(gateways[0]?.grpcUrl ?? "", queue, JOBS);
      workers.set(
        name,
        await startWorkerChild({
          name,
          urls: gateways.map((g) => g.grpcUrl),
          queue,
          workers: 2,
          concurrency: 4,
          leaseMs: 10_000,
          workMs: [10, 10],
        }),
      );
    }
    await new Promise((r) => setTimeout(r, 3000));
    const errorsBefore = await Promise.all(
      gateways.map((g) => scrape(g.httpUrl, "taskq_limiter_errors_total")),
    );
    const killedAt = Date.now();
    await victim.kill();
    await new Promise((r) => setTimeout(r, DOWN_MS));
    const limiterErrors = await Promise.all(
      gateways.map(
        async (g, i) => (await scrape(g.httpUrl, "taskq_limiter_errors_total")) - (errorsBefore[i] ?? 0),
      ),
    );
    const restartedAt = Date.now();
    await victim.restart();
    await cluster.waitHealthy();
    const drained = Object.fromEntries(
      await Promise.all(
        Object.entries(q).map(async ([name, queue]) => [
          name,
          await waitForDrain(env.databaseUrl, queue, JOBS, 90_000),
        ]),
      ),
    );
    const starts = Object.fromEntries(
      await Promise.all(
        Object.entries(q).map(async ([name, queue]) => [name, await claimStartTimes(env.databaseUrl, queue)]),
      ),
    ) as Record<"down" | "up", number[]>;
    const within = (ts: number[], from: number, to: number) => ts.filter((t) => t >= from && t < to);
    const figures = Object.fromEntries(
      (["down", "up"] as const).map((name) => {
        const after = within(starts[name], restartedAt, Number.POSITIVE_INFINITY);
        return [
          name,
          {
            busiestSecondBefore: busiestWindow(within(starts[name], killedAt - 3000, killedAt), 1000),
            whileDown: within(starts[name], killedAt + IN_FLIGHT_MS, restartedAt).length,
            firstAfterRestartMs: after.length ? (after[0] as number) - restartedAt : Number.POSITIVE_INFINITY,
            busiestSecondAfter: busiestWindow(after, 1000),
          },
        ];
      }),
    );
    const reports = [];
    for (const [name, queue] of Object.entries(q))
      reports.push(
        await judge(`Redis Cluster node down (${name})`, env.databaseUrl, queue, enqueued[name] ?? [], [
          workers.get(name) as WorkerChild,
        ]),
      );
    console.log(
      `[faults] Redis Cluster node killed for ${restartedAt - killedAt} ms, 2 gateways: limiter errors per gateway ${JSON.stringify(limiterErrors)}; claims (busiest second before, claims while down, first claim after restart ms, busiest second after) ${JSON.stringify(figures)}; final states ${JSON.stringify(drained)}`,
    );
    for (const n of limiterErrors) expect(n).toBeGreaterThan(0);
    // Fail closed on the victim's slots, and only there.
    expect(figures.down?.whileDown).toBe(0);
    expect(figures.up?.whileDown).toBeGreaterThan((DOWN_MS / 1000) * PER_SECOND * 0.5);
    for (const f of Object.values(figures)) {
      // At most burst 1 + 10 a second by Redis TIME, read here from Postgres's claim stamps: one more
      // for the moment between an admit and its stamp. Failing open would admit hundreds a second.
      expect(f.busiestSecondBefore).toBeLessThanOrEqual(MOST_PER_SECOND);
      expect(f.busiestSecondAfter).toBeLessThanOrEqual(MOST_PER_SECOND);
    }
    expect(figures.down?.firstAfterRestartMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
    for (const r of reports) expect(r).toMatchObject({ ok: true, enqueued: JOBS, settledOnce: JOBS });
  });
});
