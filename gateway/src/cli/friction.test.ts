import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Code, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorRun } from "../testing/operator-run.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// What a newcomer hits in the first minutes: output cut short by `head`, --url without a scheme or at
// the wrong port, a typo in a queue name or a number, listing a queue's jobs without knowing the states.

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const cliPath = fileURLToPath(new URL("../cli.ts", import.meta.url));

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(() => gateway?.stop());

/** Runs an operator command in-process against the test gateway (or `env`'s TASKQ_URL). */
const run = (argv: string[], env: Record<string, string> = { TASKQ_URL: gateway.grpcUrl }) =>
  operatorRun(argv, env);

describe("taskq for a newcomer", () => {
  it("stops quietly, exit 0, when the reader closes the pipe (| head)", async () => {
    expect((await run(["queue", "ensure", "piped"])).code).toBe(0);
    const child = spawn(
      process.execPath,
      ["--conditions=taskq-source", "--import", "tsx", cliPath, "queue", "ls"],
      {
        cwd: repoRoot,
        env: { ...process.env, TASKQ_URL: gateway.grpcUrl, TASKQ_TOKEN: "" },
      },
    );
    // Closed before the CLI has started: its first write meets a pipe with no reader.
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(stderr).toBe("");
    expect(code).toBe(0);
  }, 30_000);

  it("--url takes host:port without a scheme", async () => {
    const hostPort = gateway.grpcUrl.replace(/^http:\/\//, "");
    expect(await run(["queue", "get", "nowhere", "--url", hostPort])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^taskq queue get: not_found: queue nowhere/),
    });
    expect(await run(["queue", "ls"], { TASKQ_URL: hostPort })).toMatchObject({ code: 0, stderr: "" });
    expect(await run(["queue", "ls", "--url", "http://[::1"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--url must be host:port, http:\/\/host:port or https:\/\/host:port/),
    });
  });

  it("--url at the HTTP port says to use the gRPC port", async () => {
    const r = await run(["queue", "ls", "--url", gateway.httpUrl]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `taskq queue ls: ${gateway.httpUrl} answered in HTTP/1.1, not gRPC: is it the gateway's HTTP port? --url takes its gRPC port (TASKQ_GRPC_PORT, default 7070)\n`,
    );
  });

  it("--url https:// at a plaintext port says to use http://", async () => {
    const https = gateway.grpcUrl.replace(/^http:/, "https:");
    expect(await run(["queue", "ls", "--url", https])).toEqual({
      code: 1,
      stdout: "",
      stderr: `taskq queue ls: the gateway at ${https} does not speak TLS: use ${gateway.grpcUrl} (or enable TLS on the gateway)\n`,
    });
  });

  it.each([
    [
      ["queue", "set-concurrency", "q", "--max-running", "-1"],
      '--max-running must be a whole number from 1 to 1,000,000 (--off removes the cap), got "-1"',
    ],
    [
      ["queue", "set-aging", "q", "--aging-seconds", "-60"],
      '--aging-seconds must be a whole number from 1 to 31,536,000 (--off for strict priority), got "-60"',
    ],
    [
      ["queue", "set-breaker", "q", "--failure-threshold", "-5"],
      '--failure-threshold must be a whole number from 1 to 1,000,000 (--off disables the breaker), got "-5"',
    ],
    [
      ["queue", "set-throttle", "q", "--limit", "-10", "--period-ms", "60000"],
      '--limit must be a whole number from 1 to 100,000, got "-10"',
    ],
    [["job", "ls", "q", "--limit", "-1"], '--limit must be a whole number from 1 to 1,000, got "-1"'],
    [
      ["queue", "set-breaker-rate", "q", "--failure-ratio", "0.5", "--window-seconds", "-60"],
      '--window-seconds must be a whole number from 0 to 4,294,967,295, got "-60"',
    ],
  ])("%j: a negative number is a value out of range, not a missing one", async (argv, message) => {
    expect(await run(argv)).toEqual({
      code: 2,
      stdout: "",
      stderr: `taskq ${argv[0]} ${argv[1]}: ${message}\nRun "taskq ${argv[0]} ${argv[1]} --help" for usage.\n`,
    });
  });

  it("takes a negative number where one is valid (--priority -5)", async () => {
    const r = await run(["enqueue", "negative", "--payload", "{}", "--priority", "-5", "--json"]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    const { jobId } = JSON.parse(r.stdout) as { jobId: string };
    expect(JSON.parse((await run(["job", "get", jobId, "--json"])).stdout)).toMatchObject({
      job: { priority: -5 },
    });
  });

  it("a typo makes no queue: pause answers not found naming it, unless asked to --create", async () => {
    const admin = createClient(AdminService, createTransport({ baseUrl: gateway.grpcUrl }));
    const typo = await run(["queue", "pause", "mial"]);
    expect(typo).toMatchObject({ code: 1, stdout: "" });
    expect(typo.stderr).toBe(
      "taskq queue pause: not_found: queue mial not found (no jobs, no settings): ensure_queue creates it (taskq queue ensure mial), or add --create\n",
    );
    await expect(admin.pauseQueue({ queue: "mial" })).rejects.toMatchObject({ code: Code.NotFound });
    expect((await admin.listQueues({})).queues.map((q) => q.name)).not.toContain("mial");

    expect(await run(["queue", "pause", "mial", "--create"])).toMatchObject({
      code: 0,
      stdout: "paused mial\n",
    });
    expect((await admin.getQueue({ queue: "mial" })).queue?.paused).toBe(true);
    // Verbs with nothing to set up on a new queue take no --create, and say only ensure.
    expect((await run(["queue", "close-breaker", "other"])).stderr).toMatch(/ensure_queue creates it\n$/);
  });

  it.each([
    [["queue", "set-throttle", "q", "--limit", "ten", "--period-ms", "60000"], "1 to 100,000"],
    [["queue", "redrive", "q", "--limit", "ten"], "1 to 100,000"],
    [["job", "ls", "q", "--limit", "ten"], "1 to 1,000"],
    [["queue", "audit", "q", "--limit", "ten"], "1 to 1,000"],
    [["queue", "breaker-events", "q", "--limit", "ten"], "1 to 200"],
  ])("%j: the range help states (%s)", async (argv, range) => {
    const help = await run([...argv.slice(0, 2), "--help"]);
    expect(help.stdout).toMatch(new RegExp(`--limit N .*${range}`));
    const r = await run(argv);
    expect(r).toMatchObject({ code: 2, stdout: "" });
    expect(r.stderr).toMatch(
      new RegExp(`^taskq ${argv[0]} ${argv[1]}: --limit must be a whole number from ${range}, got "ten"`),
    );
  });
});
