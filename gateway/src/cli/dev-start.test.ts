import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../testing/free-port.js";

// `taskq dev` (what `npm start` runs) as a real process, started in a folder of its own with a relative
// data folder: one gateway per data folder, a failed start that exits, and what it prints on a pipe and
// on a terminal.

const cliPath = fileURLToPath(new URL("../cli.ts", import.meta.url));
// Absolute, so the process can run in a scratch folder (cwd) that has no node_modules.
const tsx = import.meta.resolve("tsx");
const nodeArgs = ["--conditions=taskq-source", "--import", tsx, cliPath, "dev"];

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Run {
  readonly proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>;
  /** Resolves once stdout matches, or rejects when the process exits first. */
  waitFor(pattern: RegExp): Promise<void>;
}

function run(cmd: string, args: string[], cwd: string, env: Record<string, string>): Run {
  const proc = spawn(cmd, args, {
    cwd,
    env: {
      ...process.env,
      TASKQ_GRPC_PORT: "0",
      TASKQ_HTTP_PORT: "0",
      TASKQ_DEV_PG_PORT: "0",
      TASKQ_CONFIG: "",
      TASKQ_TOKENS: "",
      TASKQ_TOKENS_FILE: "",
      TASKQ_LOG_FORMAT: "",
      TASKQ_LOG_LEVEL: "",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout?.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  proc.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const exited = once(proc, "close").then(() => proc.exitCode);
  cleanups.push(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    await exited;
  });
  return {
    proc,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitFor: async (pattern) => {
      while (!pattern.test(stdout)) {
        if (proc.exitCode !== null || proc.signalCode !== null) {
          throw new Error(
            `exited (${proc.exitCode ?? proc.signalCode}) before ${pattern}:\n${stdout}${stderr}`,
          );
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

async function scratch(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "taskq-dev-"));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  return root;
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await once(child, "exit");
  return child.pid ?? 0;
}

const LISTENING = /"msg":"taskq gateway listening"/;

describe("taskq dev", () => {
  it("takes over a stale lock, keeps a second gateway off its data folder, and frees it at Ctrl-C", async () => {
    const root = await scratch();
    const dataDir = join(root, ".taskq", "data");
    const lockFile = `${dataDir}.lock`;
    await mkdir(dirname(dataDir), { recursive: true });
    await writeFile(lockFile, `${await deadPid()}\n`);

    const first = run(process.execPath, nodeArgs, root, { TASKQ_DATA_DIR: ".taskq/data" });
    await first.waitFor(LISTENING);
    // Not a terminal: JSON lines only, the data folder absolute.
    const records = first
      .stdout()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const listening = records.find((r) => r.msg === "taskq gateway listening");
    expect(listening).toMatchObject({ dataDir, auth: "open", mode: "dev" });
    expect(await readFile(lockFile, "utf8")).toBe(`${first.proc.pid}\n`);

    const pidFile = join(dataDir, "postmaster.pid");
    const before = { content: await readFile(pidFile, "utf8"), mtimeMs: (await stat(pidFile)).mtimeMs };
    const second = run(process.execPath, nodeArgs, root, { TASKQ_DATA_DIR: ".taskq/data" });
    expect(await second.exited).toBe(2);
    expect(second.stderr()).toMatch(
      new RegExp(
        `^taskq: data directory ${dataDir} is in use by process ${first.proc.pid} \\(lock file ${lockFile}\\): stop that gateway, or set TASKQ_DATA_DIR [^\\n]*\\n$`,
      ),
    );
    expect(second.stdout()).not.toMatch(/applied migrations|listening/);
    expect({ content: await readFile(pidFile, "utf8"), mtimeMs: (await stat(pidFile)).mtimeMs }).toEqual(
      before,
    );
    const health = await fetch(`${String(listening?.httpUrl)}/healthz`);
    expect(health.status).toBe(200);

    first.proc.kill("SIGINT");
    expect(await first.exited).toBe(0);
    await expect(stat(lockFile)).rejects.toMatchObject({ code: "ENOENT" });
  }, 120_000);

  it("exits with one line naming the setting when its gRPC port is in use", async () => {
    const root = await scratch();
    const busy = createServer();
    busy.listen(0, "127.0.0.1");
    await once(busy, "listening");
    cleanups.push(() => new Promise((r) => busy.close(r)));
    const port = (busy.address() as { port: number }).port;

    const dev = run(process.execPath, [...nodeArgs, "--log-format", "text"], root, {
      TASKQ_DATA_DIR: "data",
      TASKQ_GRPC_PORT: String(port),
      TASKQ_DEV_PG_PORT: String(await freePort()),
    });
    expect(await dev.exited).toBe(2);
    expect(dev.stderr()).toBe(
      `taskq: gRPC port 127.0.0.1:${port} is in use (set TASKQ_GRPC_PORT or the config file's grpcPort to move it; 0 picks a free port)\n`,
    );
    // --log-format text on a pipe: short lines, no JSON.
    expect(dev.stdout()).toMatch(/^\d\d:\d\d:\d\d WARN {2}dev mode: /);
    expect(dev.stdout()).not.toContain("{");
    await expect(stat(join(root, "data.lock"))).rejects.toMatchObject({ code: "ENOENT" });
  }, 120_000);

  it("refuses a --log-format it does not know, naming the flag", async () => {
    const dev = run(process.execPath, [...nodeArgs, "--log-format", "yaml"], await scratch(), {});
    expect(await dev.exited).toBe(2);
    expect(dev.stderr()).toBe('taskq: --log-format must be one of auto, json, text, got "yaml"\n');
  }, 60_000);

  it("prints a banner with every address on a terminal, whatever the log level, and short log lines", async () => {
    const root = await scratch();
    const quoted = [process.execPath, ...nodeArgs].map((a) => `'${a}'`).join(" ");
    // util-linux's script gives the process a pseudo-terminal.
    const dev = run("script", ["-qec", quoted, "/dev/null"], root, {
      TASKQ_DATA_DIR: "data",
      TASKQ_LOG_LEVEL: "warn",
    });
    await dev.waitFor(/Ctrl-C stops it\./);
    const out = dev.stdout().replaceAll("\r\n", "\n");
    expect(out).toMatch(/\ntaskq dev is ready\n\n {2}gRPC {5}http:\/\/127\.0\.0\.1:\d+\n/);
    expect(out).toMatch(/\n {2}console {2}http:\/\/127\.0\.0\.1:\d+\/console\/\n/);
    expect(out).toMatch(/\n {2}psql {5}postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\n/);
    expect(out).toContain(`\n  data     ${join(root, "data")}\n`);
    expect(out).toContain("\n  auth     open: no tokens, every caller may do everything\n");
    expect(out).toMatch(/^\d\d:\d\d:\d\d WARN {2}dev mode: /m);
    expect(out).not.toMatch(/^\{|INFO/m);
    // Ctrl-C, to the gateway itself (its pid is in the lock).
    const pid = Number(await readFile(join(root, "data.lock"), "utf8"));
    process.kill(pid, "SIGINT");
    expect(await dev.exited).toBe(0);
  }, 120_000);
});
