import {
  type MtlsTestGateway,
  startMtlsTestGateway,
  type TestGateway,
  type TestPki,
} from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "./client.js";
import { JobState } from "./gen/taskq/v1/job_pb.js";
import { Worker } from "./worker.js";

// The SDK against a gateway with mutual TLS on a private CA: `tls: { ca, cert, key }` on Client and
// Worker; a Worker without a client certificate never gets a job, only claim errors.

let pki: TestPki;
let gateway: TestGateway;
let token: string;
let mtls: MtlsTestGateway;
beforeAll(async () => {
  mtls = await startMtlsTestGateway("sdk", ["worker", "producer"]);
  ({ gateway: gateway, pki, token } = mtls);
});
afterAll(async () => {
  await mtls?.stop();
});

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

async function until(cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting for condition");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("Client and Worker over mutual TLS", () => {
  it("enqueue, claim and settle over https:// with the CA and a client certificate", async () => {
    const tls = { ca: pki.ca, cert: pki.client.cert, key: pki.client.key };
    const client = new Client({ baseUrl: gateway.grpcUrl, token, tls });
    const worker = new Worker({
      baseUrl: gateway.grpcUrl,
      token,
      tls,
      queues: ["sdk-tls"],
      maxWaitMs: 500,
      logger: quiet,
      handler: async (job) => ({ echoed: job.json<{ n: number }>().n }),
    });
    await worker.start();
    try {
      const { jobId } = await client.enqueue({ queue: "sdk-tls", payload: { n: 7 } });
      await until(() => worker.snapshot().succeeded === 1);
      const info = await client.getJob(jobId);
      expect(info.state).toBe(JobState.SUCCEEDED);
      expect(JSON.parse(new TextDecoder().decode(info.result))).toEqual({ echoed: 7 });
    } finally {
      await worker.stop({ graceMs: 0 });
    }
  });

  it("a Worker without a client certificate is refused: claim errors, no job", async () => {
    const client = new Client({
      baseUrl: gateway.grpcUrl,
      token,
      tls: { ca: pki.ca, cert: pki.client.cert, key: pki.client.key },
    });
    const { jobId } = await client.enqueue({ queue: "sdk-tls-refused", payload: "x" });
    const worker = new Worker({
      baseUrl: gateway.grpcUrl,
      token,
      tls: { ca: pki.ca },
      queues: ["sdk-tls-refused"],
      maxWaitMs: 500,
      logger: quiet,
      handler: async () => {},
    });
    await worker.start();
    try {
      await until(() => worker.snapshot().claimErrors >= 1);
      expect(worker.snapshot().claimed).toBe(0);
      expect((await client.getJob(jobId)).state).toBe(JobState.QUEUED);
    } finally {
      await worker.stop({ graceMs: 0 });
    }
  });
});
