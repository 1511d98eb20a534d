import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { hashToken, newToken } from "@taskq/gateway";
import { haveGo, startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import { Client, createTransport } from "@taskq/sdk";
import { AdminService, JobState } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// examples/go-worker built as its README says (stubs from proto/ by protoc, GOPATH mode with Debian's
// Go packages), then run against a real gateway that requires a token; what it did is checked through
// the gateway (GetJob), not just what it printed. Without Go the tests are skipped, loudly.

const root = fileURLToPath(new URL("..", import.meta.url));
const readme = readFileSync(join(root, "examples/go-worker/README.md"), "utf8");

/** The README's shell block that opens with `line`. */
function readmeBlock(line: string): string {
  const block = readme.split(/^```sh\n/m).find((b) => b.startsWith(`${line}\n`));
  if (!block) throw new Error(`examples/go-worker/README.md has no shell block opening with '${line}'`);
  return block.slice(0, block.indexOf("```"));
}

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A running go-worker: its output so far, a wait for a line, and its exit. */
function start(bin: string, args: string[], env: Record<string, string>) {
  const child: ChildProcessWithoutNullStreams = spawn(bin, args, { env: { ...process.env, ...env } });
  const out = { stdout: "", stderr: "" };
  child.stdout.setEncoding("utf8").on("data", (s: string) => {
    out.stdout += s;
  });
  child.stderr.setEncoding("utf8").on("data", (s: string) => {
    out.stderr += s;
  });
  const exited = new Promise<Exit>((resolve) => child.on("close", (code) => resolve({ code, ...out })));
  const timer = setTimeout(() => child.kill("SIGKILL"), 40_000);
  void exited.then(() => clearTimeout(timer));
  const printed = (re: RegExp) =>
    expect.poll(() => out.stdout, { timeout: 15_000, interval: 50 }).toMatch(re);
  return { child, out, exited, printed };
}

describe.skipIf(!haveGo())("examples/go-worker", () => {
  let dir: string;
  let bin: string;
  let gateway: TestGateway;
  let client: Client;
  const token = newToken();
  let env: Record<string, string>;

  beforeAll(async () => {
    // The README's build, run as written in a scratch copy of proto/ and the example.
    dir = mkdtempSync(join(tmpdir(), "taskq-go-worker-"));
    cpSync(join(root, "proto"), join(dir, "proto"), { recursive: true });
    cpSync(join(root, "examples/go-worker"), join(dir, "examples/go-worker"), { recursive: true });
    const build = spawnSync(
      "bash",
      ["-euo", "pipefail", "-c", readmeBlock("# Go stubs with protoc, then the worker")],
      {
        cwd: dir,
        encoding: "utf8",
      },
    );
    expect(build.status, build.stderr).toBe(0);
    bin = join(dir, "go-worker");
    gateway = await startTestGateway({
      config: {
        pausedRetryMs: 300,
        tokens: [
          { name: "go", roles: ["worker", "producer", "operator"], queues: null, sha256: hashToken(token) },
        ],
      },
    });
    client = new Client({ baseUrl: gateway.grpcUrl, token });
    env = { TASKQ_GRPC_URL: gateway.grpcUrl, TASKQ_TOKEN: token };
  }, 180_000);

  afterAll(async () => {
    await gateway?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("claims, heartbeats past a short lease, settles, and exits after -once 3", async () => {
    const queue = "emails-go";
    const enqueued = await client.enqueueBatch(
      [1, 2, 3].map((n) => ({ queue, payload: { to: `go${n}@example.com` } })),
    );
    // A lease shorter than the work: the jobs only stay ours because the heartbeats extend them.
    const run = start(bin, ["-once", "3"], {
      ...env,
      TASKQ_QUEUES: queue,
      TASKQ_LEASE_MS: "1000",
      TASKQ_WORK_MS: "1500",
    });
    const out = await run.exited;
    expect(out, out.stderr).toMatchObject({ code: 0 });
    expect(out.stdout).toMatch(/LEASE_STATE_EXTENDED/);
    expect(out.stdout).toMatch(/^stopped after settling 3 jobs$/m);
    for (const { jobId } of enqueued) {
      expect(out.stdout).toContain(`job ${jobId} attempt 1 on ${queue}:`);
      expect(out.stdout).toContain(`job ${jobId} settled: SETTLE_STATUS_ACCEPTED -> JOB_STATE_SUCCEEDED`);
      const job = await client.getJob(jobId);
      expect(job).toMatchObject({ state: JobState.SUCCEEDED, attempt: 1 });
      expect(JSON.parse(new TextDecoder().decode(job.result))).toEqual({ ok: true, by: "go-worker" });
    }
  });

  it("on SIGTERM stops polling, lets the running job finish and settle, and exits 0", async () => {
    const queue = "emails-go-sigterm";
    const run = start(bin, [], { ...env, TASKQ_QUEUES: queue, TASKQ_WORK_MS: "1500" });
    await run.printed(/^go worker polling/m);
    const { jobId } = await client.enqueue({ queue, payload: { to: "term@example.com" } });
    await run.printed(new RegExp(`^job ${jobId} attempt 1 on ${queue}:`, "m"));
    run.child.kill("SIGTERM");
    const out = await run.exited;
    expect(out, out.stderr).toMatchObject({ code: 0 });
    expect(out.stderr).toMatch(/terminated: stopping/);
    expect(out.stdout).toMatch(/^stopped after settling 1 jobs$/m);
    expect((await client.getJob(jobId)).state).toBe(JobState.SUCCEEDED);
    // Stopped means stopped polling: a job enqueued now stays queued.
    const after = await client.enqueue({ queue, payload: { to: "late@example.com" } });
    expect((await client.getJob(after.jobId)).state).toBe(JobState.QUEUED);
  });

  it("skips a paused queue for its retry_after, polling the others, and takes it up once resumed", async () => {
    const [held, open] = ["emails-go-paused", "emails-go-open"];
    const admin = createClient(AdminService, createTransport({ baseUrl: gateway.grpcUrl, token }));
    await admin.ensureQueue({ queue: held });
    await admin.pauseQueue({ queue: held });
    const paused = await client.enqueue({ queue: held, payload: { to: "held@example.com" } });
    const run = start(bin, ["-once", "2"], { ...env, TASKQ_QUEUES: `${held},${open}`, TASKQ_WORK_MS: "10" });
    await run.printed(
      new RegExp(`^queue ${held} throttled \\(THROTTLE_REASON_PAUSED\\), retry in 300 ms$`, "m"),
    );
    const other = await client.enqueue({ queue: open, payload: { to: "open@example.com" } });
    await run.printed(new RegExp(`^job ${other.jobId} settled: SETTLE_STATUS_ACCEPTED`, "m"));
    expect((await client.getJob(paused.jobId)).state).toBe(JobState.QUEUED);
    await admin.resumeQueue({ queue: held });
    const out = await run.exited;
    expect(out, out.stderr).toMatchObject({ code: 0 });
    expect((await client.getJob(paused.jobId)).state).toBe(JobState.SUCCEEDED);
  });

  it("takes a claim answer past grpc-go's default 4 MiB receive limit (5 payloads near 1 MiB)", async () => {
    const queue = "emails-go-big";
    const pad = "x".repeat(1_000_000);
    const enqueued = await client.enqueueBatch([1, 2, 3, 4, 5].map((n) => ({ queue, payload: { n, pad } })));
    const run = start(bin, ["-once", "5"], { ...env, TASKQ_QUEUES: queue, TASKQ_WORK_MS: "10" });
    const out = await run.exited;
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^stopped after settling 5 jobs$/m);
    for (const { jobId } of enqueued) expect((await client.getJob(jobId)).state).toBe(JobState.SUCCEEDED);
  });

  it("the README's buf generate line writes the same stubs as its protoc line", () => {
    const bufOut = mkdtempSync(join(tmpdir(), "taskq-go-buf-"));
    try {
      const cmd = `${readmeBlock("npx buf generate --template examples/go-worker/buf.gen.yaml \\").trim()} -o ${bufOut}`;
      const gen = spawnSync("bash", ["-euo", "pipefail", "-c", cmd], { cwd: root, encoding: "utf8" });
      expect(gen.status, gen.stderr).toBe(0);
      const pkg = ".gopath/src/taskq/gen/taskqv1";
      const files = readdirSync(join(dir, pkg)).sort();
      expect(readdirSync(join(bufOut, pkg)).sort()).toEqual(files);
      // The same code, but for the header line naming the protoc version (buf says "(unknown)").
      const body = (p: string) => readFileSync(p, "utf8").replace(/^\/\/ \tprotoc .*$/m, "");
      for (const f of files) expect(body(join(bufOut, pkg, f)), f).toBe(body(join(dir, pkg, f)));
    } finally {
      rmSync(bufOut, { recursive: true, force: true });
    }
  });
});
