import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Code, ConnectError } from "@connectrpc/connect";
import { Client, Worker } from "@taskq/sdk";
import { JobState } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { ConfigError } from "../errors.js";
import { silentLogger } from "../log.js";
import { startGateway } from "../server.js";
import { haveService, testServices } from "../testing/services.js";
import { startTestGateway } from "../testing/test-gateway.js";
import { hashToken, newToken } from "./tokens.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const cliPath = fileURLToPath(new URL("../cli.ts", import.meta.url));

function taskq(args: string[], env: NodeJS.ProcessEnv, input?: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      ["--conditions=taskq-source", "--import", "tsx", cliPath, ...args],
      { cwd: repoRoot, env: { ...process.env, ...env }, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
    child.stdin?.end(input ?? "");
  });
}

const services = {
  TASKQ_DATABASE_URL: "postgres://127.0.0.1:1/none",
  TASKQ_REDIS_URL: "redis://127.0.0.1:1",
};

describe("tokens in the config", () => {
  const entry = { name: "ops", role: "operator", sha256: hashToken("secret") };

  it("reads them from the file, or from TASKQ_TOKENS, which wins", () => {
    const path = join(mkdtempSync(join(tmpdir(), "taskq-tokens-")), "taskq.json");
    writeFileSync(path, JSON.stringify({ tokens: [entry] }));
    expect(loadConfig("gateway", services, path).tokens).toEqual([
      { name: "ops", roles: ["operator"], queues: null, sha256: entry.sha256 },
    ]);
    const env = { ...services, TASKQ_TOKENS: JSON.stringify([{ ...entry, name: "from-env" }]) };
    expect(loadConfig("gateway", env, path).tokens.map((t) => t.name)).toEqual(["from-env"]);
  });

  it.each([
    [[{ ...entry, role: "admin" }], "[0].role must be one of operator, observer"],
    [[{ ...entry, sha256: "secret" }], "[0].sha256 must be 64 lowercase hex digits"],
    [[{ ...entry, queues: ["mail"] }], "[0].queues is only for worker and producer tokens"],
    [[{ ...entry, role: "worker", queues: ["bad name"] }], '[0].queues has "bad name"'],
    [[entry, { ...entry, sha256: hashToken("other") }], '[1].name "ops" is used twice'],
    [[{ ...entry, secret: "x" }], '[0]: unknown key "secret"'],
    [[{ ...entry, roles: ["worker"] }], "[0] needs exactly one of role and roles"],
    [[{ name: "w", roles: ["worker", "root"], sha256: entry.sha256 }], '[0].roles has "root"'],
    [{}, "must be a JSON array"],
  ])("refuses %j naming the entry and field", (tokens, message) => {
    const env = { ...services, TASKQ_TOKENS: JSON.stringify(tokens) };
    expect(() => loadConfig("gateway", env)).toThrow(ConfigError);
    expect(() => loadConfig("gateway", env)).toThrow(
      `TASKQ_TOKENS${message.startsWith("[") ? "" : " "}${message}`,
    );
  });
});

describe("production mode", () => {
  it("refuses to start without tokens, before touching any service", async () => {
    const config = loadConfig("gateway", services);
    await expect(startGateway(config, silentLogger())).rejects.toThrow(/refuses to start without tokens/);
  });

  it("`taskq gateway` without tokens exits 2 and says why", async () => {
    const run = await taskq(["gateway"], { ...services, TASKQ_TOKENS: "" });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/refuses to start without tokens.*taskq token new/);
  });

  it("`taskq token new` prints a token once and the entry that lets it in", async () => {
    const run = await taskq(
      ["token", "new", "--name", "mail-worker", "--role", "worker", "--queues", "mail", "--json"],
      {},
    );
    expect(run.code).toBe(0);
    const { token, entry } = JSON.parse(run.stdout) as { token: string; entry: Record<string, unknown> };
    expect(token).toMatch(/^tq_[A-Za-z0-9_-]{43}$/);
    expect(entry).toEqual({
      name: "mail-worker",
      role: "worker",
      queues: ["mail"],
      sha256: hashToken(token),
    });
    const hashed = await taskq(["token", "hash"], {}, `${token}\n`);
    expect(hashed.stdout.trim()).toBe(hashToken(token));
    const bad = await taskq(["token", "new", "--name", "x", "--role", "root"], {});
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--role must be one of/);
  });

  it.runIf(haveService("postgres") && haveService("redis"))(
    "serves workers and producers that bring their tokens, on Postgres and Redis",
    async () => {
      const secret = { worker: newToken(), producer: newToken() };
      const gw = await startTestGateway({
        engine: "postgres",
        config: {
          redisUrl: testServices.redisUrl,
          tokens: [
            { name: "w", roles: ["worker"], queues: ["prod"], sha256: hashToken(secret.worker) },
            { name: "p", roles: ["producer"], queues: null, sha256: hashToken(secret.producer) },
          ],
        },
      });
      try {
        const anonymous = new Client({ baseUrl: gw.grpcUrl });
        const refused = await anonymous.enqueue({ queue: "prod" }).catch((e) => ConnectError.from(e));
        expect(refused).toMatchObject({ code: Code.Unauthenticated });
        const client = new Client({ baseUrl: gw.grpcUrl, token: secret.producer });
        const { jobId } = await client.enqueue({ queue: "prod", payload: { n: 1 } });
        let handled: (payload: unknown) => void = () => {};
        const done = new Promise<unknown>((resolve) => {
          handled = resolve;
        });
        const worker = new Worker({
          baseUrl: gw.grpcUrl,
          token: secret.worker,
          queues: ["prod"],
          handler: async (job) => {
            handled(job.json());
          },
        });
        await worker.start();
        expect(await done).toEqual({ n: 1 });
        await expect
          .poll(async () => (await client.getJob(jobId)).state, { timeout: 10_000 })
          .toBe(JobState.SUCCEEDED);
        await worker.stop();
      } finally {
        await gw.stop();
      }
    },
  );
});
