// 1,000 worker streams reconnecting at once: a process holding 1,000 Claim streams (over 10 HTTP/2
// connections) is killed -9 and another opens 1,000 at once. The gateway's Postgres connections stay
// within its pool (they are the proxy's connections), its memory stays bounded, and it keeps serving.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { spawnTs, type TsChild } from "./child.js";
import { enqueueJobs, scenarioQueue } from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import { FAULT_TOKEN } from "./token.js";

const SWARM = fileURLToPath(new URL("./fixtures/claim-swarm.ts", import.meta.url));
const STREAMS = 1000;
const POOL = 5;
const RSS_BOUND_MB = 768;

/** Resident memory of a process, MB, from /proc. */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

/** Starts a swarm and resolves once all its streams are open; `claimed()` counts jobs it received. */
async function startSwarm(grpcUrl: string, queue: string) {
  let claimed = 0;
  let ready: () => void = () => {};
  const opened = new Promise<void>((r) => {
    ready = r;
  });
  const child: TsChild = spawnTs(
    SWARM,
    [grpcUrl, queue, String(STREAMS), "10"],
    { TASKQ_FAULT_TOKEN: FAULT_TOKEN },
    (line) => {
      const e = JSON.parse(line) as { kind: string; n?: number };
      if (e.kind === "ready") ready();
      if (e.kind === "claimed") claimed = e.n ?? claimed;
      return true;
    },
  );
  await opened;
  return { child, claimed: () => claimed };
}

describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "1,000 worker streams reconnecting at once",
  () => {
    let env: FaultEnv;
    let gateway: GatewayChild;
    const swarms: TsChild[] = [];
    beforeAll(async () => {
      env = await startFaultEnv();
      gateway = await startGatewayChild({ ...env.gateway, env: { TASKQ_DB_POOL_SIZE: String(POOL) } });
    });
    afterAll(async () => {
      await Promise.all(swarms.map((s) => s.stop()));
      await gateway?.child.stop();
      await env?.close();
    });

    it("keeps Postgres connections within the pool and memory bounded, and keeps serving", {
      timeout: 120_000,
    }, async () => {
      const queue = scenarioQueue("storm");
      const first = await startSwarm(gateway.grpcUrl, queue);
      swarms.push(first.child);
      await new Promise((r) => setTimeout(r, 3000));
      const baselineMb = rssMb(gateway.child.pid);

      let peakMb = baselineMb;
      let mostConnections = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          peakMb = Math.max(peakMb, rssMb(gateway.child.pid));
          mostConnections = Math.max(mostConnections, env.pgProxy.connections);
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const stormAt = Date.now();
      first.child.signal("SIGKILL");
      const second = await startSwarm(gateway.grpcUrl, queue);
      swarms.push(second.child);
      const reopenedMs = Date.now() - stormAt;
      await enqueueJobs(gateway.grpcUrl, queue, 200);
      const deadline = Date.now() + 20_000;
      while (second.claimed() < 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const servedMs = Date.now() - stormAt;
      await new Promise((r) => setTimeout(r, 2000));
      sampling = false;
      await sampler;
      const alive = gateway.child.proc.exitCode === null && gateway.child.proc.signalCode === null;
      console.log(
        `[faults] reconnect storm: ${STREAMS} streams killed and ${STREAMS} reopened in ${reopenedMs} ms; 200 jobs claimed by the new streams ${servedMs} ms after the storm began (${second.claimed()} claims); gateway RSS ${baselineMb.toFixed(0)} MB before, ${peakMb.toFixed(0)} MB at peak; at most ${mostConnections} Postgres connections (pool ${POOL}); gateway alive ${alive}`,
      );
      expect(alive).toBe(true);
      expect(second.claimed()).toBeGreaterThanOrEqual(200);
      expect(mostConnections).toBeLessThanOrEqual(POOL + 1);
      expect(peakMb).toBeLessThanOrEqual(RSS_BOUND_MB);
    });
  },
);
