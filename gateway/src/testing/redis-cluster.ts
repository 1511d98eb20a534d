/**
 * Local Redis servers for tests: a three-node Redis Cluster (`redis-server --cluster-enabled yes`,
 * joined by `redis-cli --cluster create`) or one server with extra arguments (a password, an ACL
 * user). Each runs as a child process on free ports with its files in a temp folder, and is stopped
 * (and its folder removed) by `stop()`. The caller asks the guard first (`haveCommand("redis-server", ...)`),
 * so a machine without redis-server skips the test instead of failing it.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import type { Cluster } from "ioredis";
import { redisClient } from "../limiter/redis-url.js";
import { requireCommand } from "./services.js";

const run = promisify(execFile);

/** A port free on 127.0.0.1 whose cluster bus port (port + 10000) is free too. */
export async function freeRedisPort(): Promise<number> {
  for (;;) {
    const port = await listenFree(0);
    if (port < 55_000 && (await listenFree(port + 10_000).catch(() => 0))) return port;
  }
}

async function listenFree(port: number): Promise<number> {
  const server = createServer();
  server.listen(port, "127.0.0.1");
  await Promise.race([once(server, "listening"), once(server, "error").then(([e]) => Promise.reject(e))]);
  const bound = (server.address() as { port: number }).port;
  server.close();
  await once(server, "close");
  return bound;
}

/** One redis-server child process. */
export interface RedisNode {
  readonly port: number;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and files (after kill()). */
  restart(): Promise<void>;
}

async function startNode(dir: string, port: number, args: readonly string[]): Promise<RedisNode> {
  let proc: ChildProcess | undefined;
  const start = async () => {
    proc = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", ...args],
      { cwd: dir, stdio: "ignore" },
    );
    await waitFor(async () => {
      await cli(port, args, "ping");
    }, `redis-server on port ${port}`);
  };
  await start();
  return {
    port,
    kill: async () => {
      const p = proc;
      if (!p || p.exitCode !== null) return;
      p.kill("SIGKILL");
      await once(p, "exit");
    },
    restart: start,
  };
}

/** redis-cli against a node, with its password when `args` set one. */
async function cli(port: number, args: readonly string[], ...cmd: string[]): Promise<string> {
  const pass = args.indexOf("--requirepass");
  const auth = pass >= 0 ? ["-a", args[pass + 1] ?? "", "--no-auth-warning"] : [];
  const { stdout } = await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...auth, ...cmd]);
  if (/^(ERR|NOAUTH|Could not connect)/m.test(stdout)) throw new Error(stdout.trim());
  return stdout;
}

async function waitFor(check: () => Promise<unknown>, what: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > until)
        throw new Error(`${what} not up after ${timeoutMs} ms: ${(err as Error).message}`);
      await sleep(100);
    }
  }
}

/** A running local Redis Cluster. */
export interface LocalRedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`. */
  readonly url: string;
  readonly nodes: readonly RedisNode[];
  /** Resolves once every node reports cluster_state:ok. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** The node owning `key`'s hash slot (asked of a live node). */
  nodeOf(key: string): Promise<RedisNode>;
  stop(): Promise<void>;
}

/**
 * Starts three cluster-enabled nodes and joins them into one cluster (no replicas). `fullCoverage`
 * false (cluster-require-full-coverage no) keeps the other nodes serving their slots while one is down.
 */
export async function startRedisCluster(opts: { fullCoverage?: boolean } = {}): Promise<LocalRedisCluster> {
  requireCommand("redis-server");
  const dir = await mkdtemp(join(tmpdir(), "taskq-redis-cluster-"));
  const nodes: RedisNode[] = [];
  const stop = async () => {
    for (const n of nodes) await n.kill();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freeRedisPort();
      const args = ["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`];
      args.push("--cluster-node-timeout", "2000");
      if (opts.fullCoverage === false) args.push("--cluster-require-full-coverage", "no");
      nodes.push(await startNode(dir, port, args));
    }
    const addresses = nodes.map((n) => `127.0.0.1:${n.port}`);
    await run("redis-cli", ["--cluster", "create", ...addresses, "--cluster-replicas", "0", "--cluster-yes"]);
    const waitHealthy = (timeoutMs = 15_000) =>
      waitFor(
        async () => {
          for (const n of nodes) {
            const info = await cli(n.port, [], "cluster", "info");
            if (!info.includes("cluster_state:ok")) throw new Error(`node ${n.port}: cluster not ok`);
          }
        },
        "Redis Cluster",
        timeoutMs,
      );
    await waitHealthy();
    const url = `redis+cluster://${addresses.join(",")}`;
    const nodeOf = async (key: string) => {
      // The client's own slot table (from CLUSTER SLOTS) and Redis's CLUSTER KEYSLOT.
      const client = redisClient(url, { maxRetriesPerRequest: 1 }) as Cluster;
      client.on("error", () => {});
      try {
        const slot = Number(await client.cluster("KEYSLOT", key));
        const owner = client.slots[slot]?.[0];
        const node = nodes.find((n) => owner === `127.0.0.1:${n.port}`);
        if (!node) throw new Error(`no node owns slot ${slot} of ${key} (${owner})`);
        return node;
      } finally {
        client.disconnect();
      }
    };
    return { url, nodes, waitHealthy, nodeOf, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Starts one plain redis-server with extra `args` (e.g. `--requirepass`), on a free port. */
export async function startRedisServer(
  args: readonly string[] = [],
): Promise<{ port: number; cli(...cmd: string[]): Promise<string>; stop(): Promise<void> }> {
  requireCommand("redis-server");
  const dir = await mkdtemp(join(tmpdir(), "taskq-redis-"));
  const node = await startNode(dir, await freeRedisPort(), args);
  return {
    port: node.port,
    cli: (...cmd) => cli(node.port, args, ...cmd),
    stop: async () => {
      await node.kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
