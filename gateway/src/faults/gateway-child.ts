// A production-mode gateway (`taskq gateway`) as a child process, pointed at Postgres and Redis through
// whatever URLs the scenario gives (its proxies), with short leases and a fast maintenance tick.
import { freePort } from "../testing/free-port.js";
import { spawnTs, type TsChild } from "./child.js";
import { FAULT_TOKENS_ENV } from "./token.js";

const SKEWED_CLOCK = new URL("./fixtures/skewed-clock.ts", import.meta.url).href;

export interface GatewayChild {
  readonly child: TsChild;
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly grpcUrl: string;
  readonly httpUrl: string;
}

export interface GatewayChildOptions {
  databaseUrl: string;
  redisUrl: string;
  /** TASKQ_REDIS_PREFIX: limiter keys of their own. Default: the gateway's ("taskq:"). */
  redisPrefix?: string | undefined;
  /** Reuse the ports of a gateway that died, as a supervisor restarting it would. Default: free ports. */
  ports?: { grpc: number; http: number } | undefined;
  /** More TASKQ_* settings. Defaults here: lease 2 s, maintenance tick 200 ms, pool 5, log level warn. */
  env?: Record<string, string | undefined> | undefined;
  /** Skews the gateway's clock (Date, performance.now) by this many ms. Default 0. */
  clockSkewMs?: number | undefined;
  /** How long to wait for /readyz, ms. Default 60000. */
  readyTimeoutMs?: number | undefined;
}

/** Starts a gateway child and resolves once its /readyz answers 200 (it migrated and reached both stores). */
export async function startGatewayChild(opts: GatewayChildOptions): Promise<GatewayChild> {
  const grpcPort = opts.ports?.grpc ?? (await freePort());
  const httpPort = opts.ports?.http ?? (await freePort());
  const child = spawnTs(
    "gateway/src/cli.ts",
    ["gateway"],
    {
      TASKQ_DATABASE_URL: opts.databaseUrl,
      TASKQ_REDIS_URL: opts.redisUrl,
      TASKQ_REDIS_PREFIX: opts.redisPrefix,
      TASKQ_HOST: "127.0.0.1",
      TASKQ_GRPC_PORT: String(grpcPort),
      TASKQ_HTTP_PORT: String(httpPort),
      TASKQ_TOKENS: FAULT_TOKENS_ENV,
      TASKQ_LOG_LEVEL: "warn",
      TASKQ_DEFAULT_LEASE_MS: "2000",
      TASKQ_MAINTENANCE_INTERVAL_MS: "200",
      TASKQ_DB_POOL_SIZE: "5",
      TASKQ_CONFIG: undefined,
      TASKQ_FAULT_CLOCK_SKEW_MS: opts.clockSkewMs ? String(opts.clockSkewMs) : undefined,
      ...opts.env,
    },
    undefined,
    opts.clockSkewMs ? [SKEWED_CLOCK] : [],
  );
  const gw = {
    child,
    grpcPort,
    httpPort,
    grpcUrl: `http://127.0.0.1:${grpcPort}`,
    httpUrl: `http://127.0.0.1:${httpPort}`,
  };
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  while (!(await isReady(gw))) {
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(`gateway exited before ready:\n${child.output()}`);
    }
    if (Date.now() > deadline) {
      await child.stop();
      throw new Error(`gateway not ready after ${opts.readyTimeoutMs ?? 60_000} ms:\n${child.output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return gw;
}

/** True when the gateway's /readyz answers 200 within a second. */
export async function isReady(gw: { httpUrl: string }): Promise<boolean> {
  try {
    return (await fetch(`${gw.httpUrl}/readyz`, { signal: AbortSignal.timeout(1000) })).ok;
  } catch {
    return false;
  }
}
