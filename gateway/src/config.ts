import { readFileSync, statSync } from "node:fs";
import { parseTokens, type TokenEntry } from "./auth/tokens.js";

/** Gateway settings. Every field has a default; env (TASKQ_*) overrides the config file. */
export interface Config {
  /** "dev": embedded PGlite and in-process limiter; "gateway": Postgres + Redis, any number of instances. */
  mode: "dev" | "gateway";
  /** Interface to bind. Default 127.0.0.1 in dev, 0.0.0.0 in gateway mode. */
  host: string;
  /** h2c port for gRPC (and Connect/gRPC-Web over HTTP/2). 0 picks a free port. Default 7070. */
  grpcPort: number;
  /** HTTP/1.1 port: Connect JSON, REST, /healthz, /readyz. 0 picks a free port. Default 7071. */
  httpPort: number;
  /** Postgres URL; required in gateway mode. */
  databaseUrl: string | null;
  /** Redis URL; required in gateway mode. */
  redisUrl: string | null;
  /**
   * Prefix of every limiter key in Redis, so gateway fleets (or test runs) can share one Redis without
   * sharing limits. 1 to 64 characters, no braces (keys carry a hash tag). Default "taskq:".
   */
  redisPrefix: string;
  /** PGlite data directory in dev mode; "memory" keeps nothing. Default ".taskq/data". */
  dataDir: string;
  /**
   * Dev mode only: the Postgres wire port in front of the embedded store, on 127.0.0.1 whatever `host`
   * says, so psql can run the SQL verbs (`psql postgres://postgres@127.0.0.1:7072/postgres`). Any user
   * and password are let in. 0 picks a free port; null (env "off") opens none. Default 7072.
   */
  devPgPort: number | null;
  /** Pooled Postgres connections per gateway (LISTEN takes one more). Default 10. */
  dbPoolSize: number;
  /**
   * Longest any one Postgres query may take, ms (migrations excepted). Postgres cancels a statement
   * past it (so it rolls back) and the gateway drops a connection still silent 0.5 s later (a stalled
   * server): the caller gets UNAVAILABLE instead of a hung call. Default 30000.
   */
  dbQueryTimeoutMs: number;
  /** Lease given to claimed jobs when the worker asks for none, ms. Default 30000. */
  defaultLeaseMs: number;
  /** Largest job payload accepted, bytes. Default 1 MiB. */
  maxPayloadBytes: number;
  /** Attempts for jobs enqueued without max_attempts. Default 25. */
  defaultMaxAttempts: number;
  /** First retry backoff, ms; doubles per attempt, with jitter. Default 1000. */
  retryBaseMs: number;
  /** Longest retry backoff, ms. Default 3600000 (1 h). */
  retryMaxMs: number;
  /** How long finished jobs are kept before deletion, seconds. Default 86400 (1 day). */
  retentionSeconds: number;
  /** Maintenance tick (lease rescue, promotion, TTL, cleanup), ms. Default 1000. */
  maintenanceIntervalMs: number;
  /** Concurrent HTTP/2 streams per connection. Default 1000. */
  maxConcurrentStreams: number;
  /** pino level: trace, debug, info, warn, error, fatal, silent. Default info. */
  logLevel: string;
  /** retry_after of a PAUSED verdict, ms: how soon a worker looks at a paused queue again. Default 1000. */
  pausedRetryMs: number;
  /**
   * retry_after of a MAX_RUNNING verdict, ms. A slot frees whenever one of the queue's jobs settles, which
   * no one can predict, so workers look again soon. Default 50.
   */
  maxRunningRetryMs: number;
  /** How often each gateway adds its throttled-verdict counts to Postgres (queue_counters), ms. Default 5000. */
  throttledFlushMs: number;
  /**
   * Queues defined by this config file (key `queues`, file only): a throttle here has source "config",
   * is applied at start-up, and the API refuses to change it. Default none.
   */
  queues: Record<string, { throttle?: { limit: number; period_ms: number } }>;
  /**
   * The version of this config's `queues` (file key `config_version`, a whole number; default the
   * file's modification time in ms). Of instances whose files disagree, the newest version owns the
   * fleet's config throttles; null without a config file (config throttles are left alone).
   */
  configVersion: number | null;
  /**
   * Bearer tokens (file key `tokens`, or TASKQ_TOKENS as JSON; env wins): `{ name, role, queues?, sha256 }`
   * each, made with `taskq token new`. Production mode refuses to start without any; dev mode without
   * any is open to every caller. Default none.
   */
  tokens: readonly TokenEntry[];
  /**
   * A JSON file of tokens in the same shape as `tokens`, watched: an entry added or removed takes effect
   * within a second on every call, open streams included. Not with `tokens`. Default none.
   */
  tokensFile: string | null;
  /** PEM certificate chain served on both ports; with `tlsKeyFile`, both ports speak TLS. Re-read when it changes. */
  tlsCertFile: string | null;
  /** PEM private key of `tlsCertFile`. */
  tlsKeyFile: string | null;
  /**
   * PEM CA bundle for mutual TLS: clients must present a certificate it signed (and a bearer token as
   * well). Needs `tlsCertFile`. Default none (no client certificates asked for).
   */
  tlsClientCaFile: string | null;
  /**
   * `taskq gateway` refuses a non-loopback `host` without TLS unless this is set (flag
   * `--insecure-plaintext`, env TASKQ_INSECURE_PLAINTEXT=1): for a TLS-terminating load balancer in
   * front. Default false.
   */
  insecurePlaintext: boolean;
}

type Field = { [K in keyof Config]: Config[K] extends number ? K : never }[keyof Config];

/** [config key, env var, min, max] for every numeric setting. */
const numbers: [Field, string, number, number][] = [
  ["grpcPort", "TASKQ_GRPC_PORT", 0, 65535],
  ["httpPort", "TASKQ_HTTP_PORT", 0, 65535],
  ["dbPoolSize", "TASKQ_DB_POOL_SIZE", 1, 1000],
  ["dbQueryTimeoutMs", "TASKQ_DB_QUERY_TIMEOUT_MS", 100, 3_600_000],
  ["defaultLeaseMs", "TASKQ_DEFAULT_LEASE_MS", 100, 3_600_000],
  ["maxPayloadBytes", "TASKQ_MAX_PAYLOAD_BYTES", 1, 64 * 1024 * 1024],
  ["defaultMaxAttempts", "TASKQ_DEFAULT_MAX_ATTEMPTS", 1, 1000],
  ["retryBaseMs", "TASKQ_RETRY_BASE_MS", 0, 86_400_000],
  ["retryMaxMs", "TASKQ_RETRY_MAX_MS", 0, 7 * 86_400_000],
  ["retentionSeconds", "TASKQ_RETENTION_SECONDS", 0, 365 * 86_400],
  ["maintenanceIntervalMs", "TASKQ_MAINTENANCE_INTERVAL_MS", 10, 60_000],
  ["maxConcurrentStreams", "TASKQ_MAX_CONCURRENT_STREAMS", 1, 100_000],
  ["pausedRetryMs", "TASKQ_PAUSED_RETRY_MS", 1, 60_000],
  ["maxRunningRetryMs", "TASKQ_MAX_RUNNING_RETRY_MS", 1, 60_000],
  ["throttledFlushMs", "TASKQ_THROTTLED_FLUSH_MS", 100, 60_000],
];

const levels = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

/** A config problem, naming the setting (file key and env var). */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Parses, defaults, validates and freezes the config in one pass. `file` is a JSON file of Config
 * keys (from --config or TASKQ_CONFIG); env wins over it. Nothing is read at import time.
 */
export function loadConfig(mode: Config["mode"], env: NodeJS.ProcessEnv, file?: string): Readonly<Config> {
  const path = file ?? env.TASKQ_CONFIG;
  let fromFile: Record<string, unknown> = {};
  if (path) {
    try {
      fromFile = JSON.parse(readFileSync(path, "utf8"));
    } catch (err) {
      throw new ConfigError(`config file ${path}: ${(err as Error).message}`);
    }
    if (typeof fromFile !== "object" || fromFile === null || Array.isArray(fromFile)) {
      throw new ConfigError(`config file ${path}: must be a JSON object`);
    }
  }
  const known = new Set<string>([
    ...numbers.map((n) => n[0]),
    "host",
    "databaseUrl",
    "redisUrl",
    "redisPrefix",
    "dataDir",
    "devPgPort",
    "logLevel",
    "queues",
    "config_version",
    "tokens",
    "tokensFile",
    "tlsCertFile",
    "tlsKeyFile",
    "tlsClientCaFile",
    "insecurePlaintext",
  ]);
  for (const key of Object.keys(fromFile)) {
    if (!known.has(key)) throw new ConfigError(`config file ${path}: unknown setting "${key}"`);
  }
  const str = (key: string, envName: string): string | undefined => {
    const v = env[envName] ?? fromFile[key];
    if (v !== undefined && typeof v !== "string")
      throw new ConfigError(`${key} (${envName}) must be a string`);
    return v === "" ? undefined : v;
  };
  const config: Config = {
    mode,
    host: str("host", "TASKQ_HOST") ?? (mode === "dev" ? "127.0.0.1" : "0.0.0.0"),
    grpcPort: 7070,
    httpPort: 7071,
    databaseUrl: str("databaseUrl", "TASKQ_DATABASE_URL") ?? null,
    redisUrl: str("redisUrl", "TASKQ_REDIS_URL") ?? null,
    redisPrefix: str("redisPrefix", "TASKQ_REDIS_PREFIX") ?? "taskq:",
    dataDir: str("dataDir", "TASKQ_DATA_DIR") ?? ".taskq/data",
    devPgPort: devPgPort(env.TASKQ_DEV_PG_PORT ?? fromFile.devPgPort),
    dbPoolSize: 10,
    dbQueryTimeoutMs: 30_000,
    defaultLeaseMs: 30_000,
    maxPayloadBytes: 1024 * 1024,
    defaultMaxAttempts: 25,
    retryBaseMs: 1000,
    retryMaxMs: 3_600_000,
    retentionSeconds: 86_400,
    maintenanceIntervalMs: 1000,
    maxConcurrentStreams: 1000,
    pausedRetryMs: 1000,
    maxRunningRetryMs: 50,
    throttledFlushMs: 5000,
    queues: configQueues(fromFile.queues, path),
    configVersion: configVersion(fromFile.config_version, path),
    tokens: configTokens(env.TASKQ_TOKENS, fromFile.tokens, path),
    tokensFile: str("tokensFile", "TASKQ_TOKENS_FILE") ?? null,
    tlsCertFile: str("tlsCertFile", "TASKQ_TLS_CERT_FILE") ?? null,
    tlsKeyFile: str("tlsKeyFile", "TASKQ_TLS_KEY_FILE") ?? null,
    tlsClientCaFile: str("tlsClientCaFile", "TASKQ_TLS_CLIENT_CA_FILE") ?? null,
    insecurePlaintext: flag(env.TASKQ_INSECURE_PLAINTEXT ?? fromFile.insecurePlaintext),
    logLevel: str("logLevel", "TASKQ_LOG_LEVEL") ?? "info",
  };
  if (!config.tlsCertFile !== !config.tlsKeyFile) {
    throw new ConfigError(
      "tlsCertFile (TASKQ_TLS_CERT_FILE) and tlsKeyFile (TASKQ_TLS_KEY_FILE) go together: set both or neither",
    );
  }
  if (config.tlsClientCaFile && !config.tlsCertFile) {
    throw new ConfigError(
      "tlsClientCaFile (TASKQ_TLS_CLIENT_CA_FILE) needs tlsCertFile and tlsKeyFile: mutual TLS is TLS first",
    );
  }
  if (config.tokensFile && config.tokens.length > 0) {
    throw new ConfigError(
      "tokensFile (TASKQ_TOKENS_FILE) and tokens (TASKQ_TOKENS) are exclusive: a token revoked from the file must not live on elsewhere",
    );
  }
  for (const [key, envName, min, max] of numbers) {
    const raw = env[envName] ?? fromFile[key];
    if (raw === undefined || raw === "") continue;
    const n = typeof raw === "number" ? raw : Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new ConfigError(
        `${key} (${envName}) must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`,
      );
    }
    config[key] = n;
  }
  if (!levels.includes(config.logLevel)) {
    throw new ConfigError(
      `logLevel (TASKQ_LOG_LEVEL) must be one of ${levels.join(", ")}, got "${config.logLevel}"`,
    );
  }
  if (config.redisPrefix.length > 64 || /[{}]/.test(config.redisPrefix)) {
    throw new ConfigError(
      `redisPrefix (TASKQ_REDIS_PREFIX) must be 1 to 64 characters without braces, got "${config.redisPrefix}"`,
    );
  }
  if (config.retryMaxMs < config.retryBaseMs) {
    throw new ConfigError(
      "retryMaxMs (TASKQ_RETRY_MAX_MS) must be at least retryBaseMs (TASKQ_RETRY_BASE_MS)",
    );
  }
  if (mode === "gateway") {
    if (!config.databaseUrl)
      throw new ConfigError("databaseUrl (TASKQ_DATABASE_URL) is required in gateway mode");
    if (!config.redisUrl) throw new ConfigError("redisUrl (TASKQ_REDIS_URL) is required in gateway mode");
    for (const [key, url, schemes] of [
      ["databaseUrl (TASKQ_DATABASE_URL)", config.databaseUrl, ["postgres:", "postgresql:"]],
      ["redisUrl (TASKQ_REDIS_URL)", config.redisUrl, ["redis:", "rediss:"]],
    ] as const) {
      let scheme: string;
      try {
        scheme = new URL(url).protocol;
      } catch {
        throw new ConfigError(`${key} is not a valid URL`);
      }
      if (!(schemes as readonly string[]).includes(scheme)) {
        throw new ConfigError(`${key} must start with ${schemes.join(" or ")}//`);
      }
    }
  }
  return Object.freeze(config);
}

/** A boolean setting: true/false in the file, 1/0 or true/false in env. */
function flag(raw: unknown): boolean {
  if (raw === undefined || raw === "" || raw === false || raw === "0" || raw === "false") return false;
  if (raw === true || raw === "1" || raw === "true") return true;
  throw new ConfigError(
    `insecurePlaintext (TASKQ_INSECURE_PLAINTEXT) must be true or false (1 or 0), got ${JSON.stringify(raw)}`,
  );
}

/** devPgPort: an integer port, or "off" / null for none; default 7072. */
function devPgPort(raw: unknown): number | null {
  if (raw === undefined || raw === "") return 7072;
  if (raw === null || raw === "off") return null;
  const n = typeof raw === "number" ? raw : Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new ConfigError(
      `devPgPort (TASKQ_DEV_PG_PORT) must be a port from 0 to 65535 or "off", got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

/** Tokens from TASKQ_TOKENS (a JSON array) when set, else from the file's `tokens`. */
function configTokens(
  fromEnv: string | undefined,
  fromFile: unknown,
  path: string | undefined,
): TokenEntry[] {
  let raw = fromFile;
  let where = `config file ${path}: tokens`;
  if (fromEnv) {
    where = "TASKQ_TOKENS";
    try {
      raw = JSON.parse(fromEnv);
    } catch {
      throw new ConfigError("TASKQ_TOKENS must be a JSON array of { name, role, queues?, sha256 }");
    }
  }
  if (raw === undefined) return [];
  try {
    return parseTokens(raw);
  } catch (err) {
    throw new ConfigError(
      `${where}${(err as Error).message.startsWith("[") ? "" : " "}${(err as Error).message}`,
    );
  }
}

const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** `config_version` as given, else the file's modification time (ms), else null without a file. */
function configVersion(raw: unknown, path: string | undefined): number | null {
  if (raw !== undefined) {
    if (!Number.isSafeInteger(raw) || (raw as number) < 0)
      throw new ConfigError(`config file ${path}: config_version must be a whole number from 0`);
    return raw as number;
  }
  return path ? Math.floor(statSync(path).mtimeMs) : null;
}

/** Validates the file's `queues` section: { "<queue>": { "throttle": { "limit": n, "period_ms": n } } }. */
function configQueues(raw: unknown, path: string | undefined): Config["queues"] {
  if (raw === undefined) return {};
  const where = `config file ${path}: queues`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new ConfigError(`${where} must be an object`);
  const out: Config["queues"] = {};
  for (const [name, def] of Object.entries(raw)) {
    if (!QUEUE_NAME.test(name))
      throw new ConfigError(`${where}: "${name}" is not a queue name (${QUEUE_NAME.source})`);
    const d = def as { throttle?: { limit?: unknown; period_ms?: unknown } };
    if (typeof d !== "object" || d === null) throw new ConfigError(`${where}.${name} must be an object`);
    for (const key of Object.keys(d)) {
      if (key !== "throttle") throw new ConfigError(`${where}.${name}: unknown setting "${key}"`);
    }
    if (d.throttle === undefined) {
      out[name] = {};
      continue;
    }
    const { limit, period_ms } = d.throttle;
    if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > 100_000) {
      throw new ConfigError(`${where}.${name}.throttle.limit must be an integer from 1 to 100000`);
    }
    if (!Number.isInteger(period_ms) || (period_ms as number) < 1000 || (period_ms as number) > 86_400_000) {
      throw new ConfigError(`${where}.${name}.throttle.period_ms must be an integer from 1000 to 86400000`);
    }
    out[name] = { throttle: { limit: limit as number, period_ms: period_ms as number } };
  }
  return out;
}
