import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { hashToken, newToken } from "@taskq/gateway";
import {
  debianPython,
  havePythonGrpc,
  type MtlsTestGateway,
  startMtlsTestGateway,
  startTestGateway,
  type TestGateway,
} from "@taskq/gateway/testing";
import { Client } from "@taskq/sdk";
import { JobState } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Runs every example as its own process against a real in-memory gateway, then checks what it did
// through the gateway (GetJob), not just what it printed.

const root = fileURLToPath(new URL("..", import.meta.url));
const CHILD_TIMEOUT_MS = 40_000;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command from the repo root; rejects when it outlives the timeout; always kills it. */
// The Python example needs grpcio and grpc_tools: without them its tests are skipped, loudly.
const pythonGrpc = havePythonGrpc();

async function run(cmd: string, args: string[], env: Record<string, string>): Promise<Run> {
  const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: "pipe" });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => {
    stdout += s;
  });
  child.stderr.setEncoding("utf8").on("data", (s: string) => {
    stderr += s;
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<Run>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${cmd} ${args.join(" ")} timed out\nstdout:\n${stdout}\nstderr:\n${stderr}`)),
        CHILD_TIMEOUT_MS,
      );
      child.on("error", reject);
      child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
    });
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
}

const tsx = (file: string, ...args: string[]) => [
  "--conditions=taskq-source",
  "--import",
  "tsx",
  file,
  ...args,
];

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("examples", () => {
  let gateway: TestGateway;
  let client: Client;

  // The gateway requires a token, as in production: each example must send TASKQ_TOKEN.
  const token = newToken();

  beforeAll(async () => {
    gateway = await startTestGateway({
      config: {
        tokens: [{ name: "examples", roles: ["worker", "producer"], queues: null, sha256: hashToken(token) }],
      },
    });
    client = new Client({ baseUrl: gateway.grpcUrl, token });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it("ts-worker.ts enqueues jobs, retries the flaky one, and exits after --once 3", async () => {
    const queue = "emails-ts";
    const out = await run(process.execPath, tsx("examples/ts-worker.ts", "--once", "3"), {
      TASKQ_GRPC_URL: gateway.grpcUrl,
      TASKQ_TOKEN: token,
      TASKQ_QUEUE: queue,
    });
    expect(out, out.stderr).toMatchObject({ code: 0 });
    const ids = [...out.stdout.matchAll(/^enqueued job (\d+) for /gm)].map((m) => m[1] as string);
    expect(ids).toHaveLength(3);
    expect(out.stdout).toMatch(/failed: mail server busy/);

    const jobs = await Promise.all(ids.map((id) => client.getJob(id)));
    for (const job of jobs) {
      expect(job.queue).toBe(queue);
      expect(job.state).toBe(JobState.SUCCEEDED);
      expect(JSON.parse(text(job.result))).toMatchObject({
        deliveredTo: expect.stringMatching(/@example\.com$/),
      });
    }
    // The first job failed once with a retryable error and succeeded on its second attempt.
    expect(jobs.map((j) => j.attempt)).toEqual([2, 1, 1]);
    expect(jobs[0]?.lastError).toMatchObject({ type: "RetryAfterError", retryable: true });
    expect(out.stdout).toMatch(/worker stopped: claimed 4, succeeded 3, failed attempts 1/);
  });

  it("the README shows five-minutes.ts as it is (its leading comment aside)", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const shown = readme.match(/^```ts\n([\s\S]*?)^```$/m)?.[1];
    const file = readFileSync(new URL("./five-minutes.ts", import.meta.url), "utf8").replace(
      /^(\/\/.*\n)+/,
      "",
    );
    expect(shown).toBe(file);
  });

  it("five-minutes.ts, the README's TypeScript example, runs as written and its job succeeds", async () => {
    const out = await run(process.execPath, tsx("examples/five-minutes.ts"), {
      TASKQ_GRPC_URL: gateway.grpcUrl,
      TASKQ_TOKEN: token,
    });
    expect(out, out.stderr).toMatchObject({ code: 0, stderr: "" });
    expect(out.stdout).toMatch(/^sending mail to ada$/m);
    const jobId = out.stdout.match(/^job (\d+) succeeded: \{"sent":true\}$/m)?.[1];
    expect(jobId, out.stdout).toBeDefined();
    const job = await client.getJob(jobId ?? "");
    expect(job).toMatchObject({ queue: "emails", state: JobState.SUCCEEDED, attempt: 1 });
    expect(JSON.parse(text(job.payload))).toEqual({ to: "ada" });
  });

  it("grpc-js-worker.mjs claims, heartbeats and settles with plain grpc-js stubs", async () => {
    const queue = "emails-grpc-js";
    const enqueued = await client.enqueueBatch(
      [1, 2, 3].map((n) => ({ queue, payload: { to: `grpc${n}@example.com` } })),
    );
    // A lease shorter than the work: the job only stays ours because the heartbeats extend it.
    const out = await run(process.execPath, ["examples/grpc-js-worker.mjs", "--once", "3"], {
      TASKQ_GRPC_URL: gateway.grpcUrl,
      TASKQ_TOKEN: token,
      TASKQ_QUEUES: queue,
      TASKQ_LEASE_MS: "1000",
      TASKQ_WORK_MS: "1500",
    });
    expect(out, out.stderr).toMatchObject({ code: 0 });
    expect(out.stdout).toMatch(/LEASE_STATE_EXTENDED/);
    expect(out.stdout).toMatch(/stopped after settling 3 jobs/);
    for (const { jobId } of enqueued) {
      expect(out.stdout).toContain(`job ${jobId} attempt 1 on ${queue}:`);
      expect(out.stdout).toContain(`job ${jobId} settled: SETTLE_STATUS_ACCEPTED -> JOB_STATE_SUCCEEDED`);
      const job = await client.getJob(jobId);
      expect(job.state).toBe(JobState.SUCCEEDED);
      expect(job.attempt).toBe(1);
      expect(JSON.parse(text(job.result))).toEqual({ ok: true, by: "grpc-js-worker" });
    }
  });

  it("claim-once.sh enqueues and claims over Connect JSON with curl", async () => {
    const queue = "emails-curl";
    const out = await run("bash", ["examples/claim-once.sh"], {
      TASKQ_HTTP_URL: gateway.httpUrl,
      TASKQ_TOKEN: token,
      TASKQ_QUEUE: queue,
    });
    expect(out, out.stderr).toMatchObject({ code: 0 });
    const [, enqueueJson = "", claimJson = ""] = out.stdout.split(/^== (?:Enqueue|ClaimOnce)$/m);
    const { jobId } = JSON.parse(enqueueJson) as { jobId: string };
    const claimed = JSON.parse(claimJson) as {
      jobs: { id: string; queue: string; attempt: number; payload: string; contentType: string }[];
    };
    expect(claimed.jobs).toHaveLength(1);
    const job = claimed.jobs[0];
    expect(job).toMatchObject({ id: jobId, queue, attempt: 1, contentType: "application/json" });
    expect(JSON.parse(Buffer.from(job?.payload ?? "", "base64").toString("utf8"))).toEqual({
      to: "curl@example.com",
      subject: "Hello from curl",
    });
    // Claimed and never settled (curl cannot open a Settle stream): it holds a lease until it expires.
    const info = await client.getJob(jobId);
    expect(info.state).toBe(JobState.RUNNING);
    expect(info.attempt).toBe(1);
  });
});

// The same examples against a gateway that serves TLS with a private CA and asks for client
// certificates: each example trusts TASKQ_CA_FILE and presents TASKQ_CERT_FILE / TASKQ_KEY_FILE.
describe("examples over mutual TLS", () => {
  let mtls: MtlsTestGateway;
  let gateway: TestGateway;
  let client: Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    mtls = await startMtlsTestGateway("examples", ["worker", "producer"]);
    const { pki, token, tls } = mtls;
    gateway = mtls.gateway;
    client = new Client({ baseUrl: gateway.grpcUrl, token, tls });
    env = {
      TASKQ_TOKEN: token,
      TASKQ_CA_FILE: pki.caFile,
      TASKQ_CERT_FILE: pki.client.certFile,
      TASKQ_KEY_FILE: pki.client.keyFile,
    };
  });

  afterAll(async () => {
    await mtls?.stop();
  });

  it("ts-worker.ts runs its jobs over https://", async () => {
    expect(gateway.grpcUrl).toMatch(/^https:/);
    const out = await run(process.execPath, tsx("examples/ts-worker.ts", "--once", "1"), {
      ...env,
      TASKQ_GRPC_URL: gateway.grpcUrl,
      TASKQ_QUEUE: "emails-ts-tls",
    });
    expect(out, out.stderr).toMatchObject({ code: 0 });
    const id = out.stdout.match(/^enqueued job (\d+) for /m)?.[1] ?? "";
    expect((await client.getJob(id)).state).toBe(JobState.SUCCEEDED);
  });

  it("grpc-js-worker.mjs settles over https://", async () => {
    const queue = "emails-grpc-js-tls";
    const { jobId } = await client.enqueue({ queue, payload: { to: "tls@example.com" } });
    const out = await run(process.execPath, ["examples/grpc-js-worker.mjs", "--once", "1"], {
      ...env,
      TASKQ_GRPC_URL: gateway.grpcUrl,
      TASKQ_QUEUES: queue,
      TASKQ_WORK_MS: "10",
    });
    expect(out, out.stderr).toMatchObject({ code: 0 });
    expect((await client.getJob(jobId)).state).toBe(JobState.SUCCEEDED);
  });

  it.skipIf(!pythonGrpc)(
    "python-worker.py enqueues, claims and settles over mutual TLS with grpcio",
    async () => {
      const queue = "emails-python-tls";
      const out = await run(debianPython, ["examples/python-worker.py"], {
        ...env,
        TASKQ_GRPC_ADDR: new URL(gateway.grpcUrl).host,
        TASKQ_QUEUE: queue,
        TASKQ_ONCE: "1",
      });
      expect(out, out.stderr).toMatchObject({ code: 0 });
      const jobId = /enqueued job (\d+)/.exec(out.stdout)?.[1] ?? "";
      expect(out.stdout).toContain(`job ${jobId} attempt 1: SETTLE_STATUS_ACCEPTED`);
      const job = await client.getJob(jobId);
      expect(job).toMatchObject({ queue, state: JobState.SUCCEEDED });
      expect(text(job.result)).toBe("sent");
    },
  );

  it.skipIf(!pythonGrpc)("python-worker.py without the client certificate is refused", async () => {
    const { TASKQ_CERT_FILE: _cert, TASKQ_KEY_FILE: _key, ...caOnly } = env;
    const out = await run(debianPython, ["examples/python-worker.py"], {
      ...caOnly,
      TASKQ_GRPC_ADDR: new URL(gateway.grpcUrl).host,
      TASKQ_ONCE: "1",
    });
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/UNAVAILABLE|handshake|certificate/i);
  });

  it("claim-once.sh claims over https:// with curl", async () => {
    const queue = "emails-curl-tls";
    const out = await run("bash", ["examples/claim-once.sh"], {
      ...env,
      TASKQ_HTTP_URL: gateway.httpUrl,
      TASKQ_QUEUE: queue,
    });
    expect(out, out.stderr).toMatchObject({ code: 0 });
    const [, enqueueJson = ""] = out.stdout.split(/^== (?:Enqueue|ClaimOnce)$/m);
    const { jobId } = JSON.parse(enqueueJson) as { jobId: string };
    expect((await client.getJob(jobId)).state).toBe(JobState.RUNNING);
  });
});
