// A fleet of production-mode gateways for scenarios that need more than one: each is `taskq gateway`
// (Postgres + Redis) started as a child process on free ports, exactly as `peers/taskq.ts` starts its
// single one, all on the same database and Redis. The first is started alone (it runs the migrations),
// the rest in parallel once it is ready. Each member has its own HTTP/2 transport, SDK `Client` and
// connect `AdminService` client; `cpuSeconds()` reads the children's CPU time from /proc so a scenario
// can say where the time went. TASKQ_BENCH_GATEWAY_NODE_ARGS / _ENV / _CLI apply as for the taskq peer.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { freePort } from "@taskq/gateway/testing";
import { Client, createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { waitUntil } from "./peers/adapter.js";
import { BENCH_TOKEN, BENCH_TOKENS_ENV } from "./token.js";

/** Repository root: bench/src → ../.. */
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export type AdminClient = ReturnType<typeof createClient<typeof AdminService>>;

export interface FleetMember {
  readonly index: number;
  readonly grpcUrl: string;
  readonly transport: ReturnType<typeof createTransport>;
  readonly client: Client;
  readonly admin: AdminClient;
  readonly pid: number | undefined;
}

export interface GatewayFleet {
  readonly members: readonly FleetMember[];
  /** CPU seconds (user + system) used so far by all gateway children together. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** CPU seconds (user + system) of a process so far, from /proc; 0 where unavailable. */
export function procCpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

function extraEnv(raw: string | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of (raw ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at > 0) env[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return env;
}

interface Child {
  proc: ChildProcess;
  exited: Promise<unknown>;
}

async function startChild(
  index: number,
  databaseUrl: string,
  redisUrl: string,
  log: (m: string) => void,
  children: Child[],
  built: boolean,
): Promise<FleetMember> {
  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const nodeArgs = (process.env.TASKQ_BENCH_GATEWAY_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
  // The built gateway runs on plain node, as `taskq gateway` does once installed (tsx's loader alone
  // holds some 75 MB); the source one through tsx.
  const cli = built
    ? [BUILT_CLI]
    : [
        "--conditions=taskq-source",
        "--import",
        "tsx",
        process.env.TASKQ_BENCH_GATEWAY_CLI ?? "gateway/src/cli.ts",
      ];
  const proc = spawn(process.execPath, [...nodeArgs, ...cli, "gateway"], {
    cwd: ROOT,
    env: {
      ...process.env,
      TASKQ_DATABASE_URL: databaseUrl,
      TASKQ_REDIS_URL: redisUrl,
      TASKQ_HOST: "127.0.0.1",
      TASKQ_GRPC_PORT: String(grpcPort),
      TASKQ_HTTP_PORT: String(httpPort),
      TASKQ_LOG_LEVEL: "warn",
      TASKQ_TOKENS: BENCH_TOKENS_ENV,
      ...extraEnv(process.env.TASKQ_BENCH_GATEWAY_ENV),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push({ proc, exited: once(proc, "exit") });
  const relay = (buf: Buffer) => {
    for (const line of buf.toString().split("\n")) if (line.trim()) log(`gateway ${index}: ${line}`);
  };
  proc.stdout?.on("data", relay);
  proc.stderr?.on("data", relay);
  let exitCode: number | null | undefined;
  proc.once("exit", (code) => {
    exitCode = code;
  });
  const readyz = `http://127.0.0.1:${httpPort}/readyz`;
  await waitUntil(
    async () => {
      if (exitCode !== undefined)
        throw new Error(`gateway ${index} exited with code ${exitCode} before ready`);
      try {
        return (await fetch(readyz)).ok;
      } catch {
        return false;
      }
    },
    50,
    60_000,
  );
  const grpcUrl = `http://127.0.0.1:${grpcPort}`;
  const transport = createTransport({ baseUrl: grpcUrl, token: BENCH_TOKEN });
  return {
    index,
    grpcUrl,
    transport,
    client: new Client({ baseUrl: grpcUrl, transport }),
    admin: createClient(AdminService, transport),
    pid: proc.pid,
  };
}

/** The gateway as `npm run build` leaves it. */
const BUILT_CLI = "gateway/dist/cli.js";

/**
 * Refuses a build older than the gateway's source, which would measure code that is no longer there.
 */
function requireFreshBuild(): void {
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((m, e) => {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory()) return Math.max(m, newest(path));
      return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? Math.max(m, statSync(path).mtimeMs) : m;
    }, 0);
  // tsc -b rewrites what changed and its build info, so that file's time is the build's.
  const info = `${ROOT}gateway/tsconfig.tsbuildinfo`;
  if (!existsSync(`${ROOT}${BUILT_CLI}`) || !existsSync(info))
    throw new Error(`${BUILT_CLI} is missing: run \`npm run build\` first`);
  if (newest(`${ROOT}gateway/src`) > statSync(info).mtimeMs)
    throw new Error(`${BUILT_CLI} is older than gateway/src: run \`npm run build\` first`);
}

/**
 * Starts `count` gateways on one database and Redis; `stop()` SIGTERMs them (SIGKILL after 10 s).
 * `built` runs gateway/dist (refused when older than the source) instead of the source through tsx.
 */
export async function startGatewayFleet(opts: {
  count: number;
  databaseUrl: string;
  redisUrl: string;
  log: (m: string) => void;
  built?: boolean;
}): Promise<GatewayFleet> {
  const built = opts.built ?? false;
  if (built) requireFreshBuild();
  const children: Child[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(async ({ proc, exited }) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return;
        proc.kill("SIGTERM");
        const killer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(killer);
      }),
    );
  };
  try {
    const first = await startChild(0, opts.databaseUrl, opts.redisUrl, opts.log, children, built);
    const rest = await Promise.all(
      Array.from({ length: opts.count - 1 }, (_, i) =>
        startChild(i + 1, opts.databaseUrl, opts.redisUrl, opts.log, children, built),
      ),
    );
    const members = [first, ...rest];
    return {
      members,
      cpuSeconds: () => members.reduce((sum, m) => sum + procCpuSeconds(m.pid), 0),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
