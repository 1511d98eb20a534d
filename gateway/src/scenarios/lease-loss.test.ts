import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { Client, Worker } from "@taskq/sdk";
import { JobState } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, type GrpcStubs, grpcStubs } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const fixture = fileURLToPath(new URL("../testing/fixtures/stuck-worker.ts", import.meta.url));

/** Starts the stuck worker in its own process and resolves with the first lease it reports. */
async function startDoomedWorker(grpcUrl: string, queue: string) {
  const child = spawn(
    process.execPath,
    ["--conditions=taskq-source", "--import", "tsx", fixture, grpcUrl, queue],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  child.stdout.setEncoding("utf8");
  while (!/claimed \d+ \d+\n/.test(out)) {
    const [chunk] = (await Promise.race([once(child.stdout, "data"), once(child, "exit")])) as [string];
    if (child.exitCode !== null) throw new Error(`worker exited early: ${out}`);
    out += chunk;
  }
  const [, id, attempt] = /claimed (\d+) (\d+)/.exec(out) ?? [];
  return { child, id: id as string, attempt: Number(attempt) };
}

for (const engine of ["pglite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && !(haveService("postgres") && haveService("redis")))(
    `a worker killed mid-job (${engine})`,
    () => {
      let gw: TestGateway;
      let stubs: GrpcStubs;
      beforeAll(async () => {
        gw = await startTestGateway({ engine, config: { maintenanceIntervalMs: 100 } });
        stubs = grpcStubs(gw.grpcUrl);
      });
      afterAll(async () => {
        stubs.close();
        await gw.stop();
      });

      it("gets its job claimed again after the lease, finished once, and its late settle refused", async () => {
        const client = new Client({ baseUrl: gw.grpcUrl });
        const { jobId: id } = await client.enqueue({ queue: "kill", payload: { n: 1 } });
        const doomed = await startDoomedWorker(gw.grpcUrl, "kill");
        expect(doomed).toMatchObject({ id, attempt: 1 });
        const killedAt = Date.now();
        doomed.child.kill("SIGKILL");
        await once(doomed.child, "exit");

        const seen: number[] = [];
        const survivor = new Worker({
          baseUrl: gw.grpcUrl,
          queues: ["kill"],
          handler: async (job) => {
            seen.push(job.attempt);
            return "done";
          },
        });
        await survivor.start();
        let info = await client.getJob(id);
        while (info.state !== JobState.SUCCEEDED && Date.now() - killedAt < 15_000) {
          await new Promise((r) => setTimeout(r, 50));
          info = await client.getJob(id);
        }
        await survivor.stop();
        expect(seen).toEqual([2]);
        expect(info).toMatchObject({ state: JobState.SUCCEEDED, attempt: 2 });
        // The lease was 1 s and the worker had just claimed: no re-claim could come before it ran out.
        expect(Date.now() - killedAt).toBeGreaterThanOrEqual(500);

        const settle = duplex(stubs.worker, "Settle");
        const late = await settle.send({
          settlements: [{ lease: { job_id: id, attempt: 1 }, success: { result: Buffer.from("stale") } }],
        });
        settle.end();
        expect(late.results[0].status).toBe("SETTLE_STATUS_LEASE_LOST");
        expect(await client.getJob(id)).toEqual(info);
      });
    },
  );
}
