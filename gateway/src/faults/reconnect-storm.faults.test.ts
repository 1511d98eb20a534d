// 1,000 worker streams reconnecting at once: a process holding 1,000 Claim streams (over 10 HTTP/2
// connections) is killed -9 and another opens 1,000 at once. The gateway's Postgres connections stay
// within its pool (they are the proxy's connections), its memory stays bounded, and it keeps serving;
// its open-streams gauge never reads more than was opened, and comes back to the reopened swarm's
// count once the killed one's streams are gone, then to its baseline once that swarm stops too.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { spawnTs, type TsChild } from "./child.js";
import { enqueueJobs, scenarioQueue } from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import { openStreams, openStreamsUntil } from "./scrape.js";
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
      const baseStreams = await openStreams(gateway.httpUrl);
      const first = await startSwarm(gateway.grpcUrl, queue);
      swarms.push(first.child);
      await new Promise((r) => setTimeout(r, 3000));
      // The swarm says "ready" once it sent its polls; the gateway counts them as their handlers start.
      const firstOpen = await openStreamsUntil(gateway.httpUrl, (n) => n >= baseStreams + STREAMS, 10_000);
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
      let peakStreams = firstOpen.n;
      const streamSampler = (async () => {
        while (sampling) {
          peakStreams = Math.max(peakStreams, await openStreams(gateway.httpUrl).catch(() => 0));
          await new Promise((r) => setTimeout(r, 100));
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
      await streamSampler;
      // The killed swarm's streams are gone (the kernel closed its connections): exactly the reopened ones.
      const reopenedOpen = await openStreamsUntil(
        gateway.httpUrl,
        (n) => n === baseStreams + STREAMS,
        10_000,
      );
      const goneMs = Date.now() - stormAt;
      const stoppedAt = Date.now();
      await second.child.stop();
      const afterStop = await openStreamsUntil(gateway.httpUrl, (n) => n === baseStreams, 10_000);
      const stoppedMs = Date.now() - stoppedAt;
      const alive = gateway.child.proc.exitCode === null && gateway.child.proc.signalCode === null;
      console.log(
        `[faults] reconnect storm: ${STREAMS} streams killed and ${STREAMS} reopened in ${reopenedMs} ms; 200 jobs claimed by the new streams ${servedMs} ms after the storm began (${second.claimed()} claims); gateway RSS ${baselineMb.toFixed(0)} MB before, ${peakMb.toFixed(0)} MB at peak; at most ${mostConnections} Postgres connections (pool ${POOL}); open streams ${baseStreams} before, ${firstOpen.n} with the first swarm, ${peakStreams} at peak, ${reopenedOpen.n} once the killed streams were gone (read ${goneMs} ms after the kill), ${afterStop.n} ${stoppedMs} ms after the second swarm was stopped; gateway alive ${alive}`,
      );
      expect(alive).toBe(true);
      expect(second.claimed()).toBeGreaterThanOrEqual(200);
      expect(mostConnections).toBeLessThanOrEqual(POOL + 1);
      expect(peakMb).toBeLessThanOrEqual(RSS_BOUND_MB);
      expect(firstOpen.n).toBe(baseStreams + STREAMS);
      expect(peakStreams).toBeLessThanOrEqual(baseStreams + 2 * STREAMS);
      expect(reopenedOpen.n).toBe(baseStreams + STREAMS);
      expect(afterStop.n).toBe(baseStreams);
    });
  },
);
