import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// `taskq` is a real command: `npx taskq …` from a checkout after `npm ci` (no build), printing only
// what the command prints (no npm banner), so its --json output pipes into a parser.

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(() => gateway?.stop());

function npx(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      "npx",
      ["--no-install", "taskq", ...args],
      { cwd: repoRoot, env: { ...process.env, TASKQ_URL: "", TASKQ_TOKEN: "" }, timeout: 60_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

describe("npx taskq", () => {
  it("runs the CLI from the checkout, quietly: help, and --json that parses", async () => {
    const help = await npx("--help");
    expect(help).toMatchObject({ code: 0, stderr: "" });
    expect(help.stdout).toMatch(/^taskq — a gRPC worker gateway/);

    await gateway.store.db.query({ name: "", text: "select taskq.ensure_queue('npx', '{}', 'test')" });
    const ls = await npx("queue", "ls", "--json", "--url", gateway.grpcUrl.replace(/^http:\/\//, ""));
    expect(ls).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(ls.stdout)).toMatchObject({ queues: [{ name: "npx" }] });
  }, 120_000);
});
