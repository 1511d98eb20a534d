import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "./client.js";

// A Worker without a logger reports trouble on stderr at warn level, and nothing else; silentLogger
// silences it. Each case is a real worker process (sdk-ts/src/fixtures/failing-worker.ts), so what is
// checked is what a user would see on the terminal.

const fixture = fileURLToPath(new URL("./fixtures/failing-worker.ts", import.meta.url));

async function runWorker(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--conditions=taskq-source", "--import", "tsx", fixture, ...args], {
    stdio: "pipe",
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => {
    stdout += s;
  });
  child.stderr.setEncoding("utf8").on("data", (s: string) => {
    stderr += s;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

let gateway: TestGateway;
let client: Client;
beforeAll(async () => {
  gateway = await startTestGateway({ config: { retryBaseMs: 10, maintenanceIntervalMs: 50 } });
  client = new Client({ baseUrl: gateway.grpcUrl });
});
afterAll(() => gateway.stop());

describe("the Worker's default logger", () => {
  it("writes each failed handler attempt to stderr, one warn line each", async () => {
    const { jobId } = await client.enqueue({ queue: "log-default", payload: { to: "ada" }, maxAttempts: 2 });
    const out = await runWorker([gateway.grpcUrl, "log-default", "failed", "2"]);
    expect(out, out.stderr).toMatchObject({ code: 0, stdout: "done\n" });
    const lines = out.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(2);
    for (const [i, line] of lines.entries()) {
      expect(JSON.parse(line.slice("taskq: handler failed ".length))).toEqual({
        queue: "log-default",
        jobId,
        attempt: i + 1,
        err: { name: "Error", message: "smtp down" },
      });
    }
  });

  it("writes stream errors to stderr", async () => {
    // Nothing listens on port 1: every claim stream fails and the worker reconnects.
    const out = await runWorker(["http://127.0.0.1:1", "log-stream", "claimErrors", "2"]);
    expect(out, out.stderr).toMatchObject({ code: 0, stdout: "done\n" });
    expect(out.stderr).toMatch(/^taskq: claim stream failed; reconnecting \{"err":\{.*"code":14/m);
  });

  it("says nothing with silentLogger", async () => {
    await client.enqueue({ queue: "log-silent", payload: { to: "ada" }, maxAttempts: 2 });
    const failing = await runWorker([gateway.grpcUrl, "log-silent", "failed", "2", "silent"]);
    expect(failing).toEqual({ code: 0, stdout: "done\n", stderr: "" });
    const unreachable = await runWorker(["http://127.0.0.1:1", "log-silent", "claimErrors", "2", "silent"]);
    expect(unreachable).toEqual({ code: 0, stdout: "done\n", stderr: "" });
  });
});
