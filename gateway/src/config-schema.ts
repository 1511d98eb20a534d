import * as v from "valibot";
import { parseTokens, type TokenEntry } from "./auth/tokens.js";
import { parseRedisUrl } from "./limiter/redis-url.js";
import { QUEUE_NAME } from "./queue-name.js";

/**
 * What the world knows a setting by. The loader reads `env` then `file`, error messages name both, and
 * `npm run docs:config` prints the table of docs/configuration.md from the same entries.
 */
export interface SettingMeta {
  /** The TASKQ_* environment variable; null for a setting only the config file can give. */
  readonly env: string | null;
  /** The config file's key: the setting's name unless given. */
  readonly file: string;
  /** One line for the docs table. */
  readonly description: string;
  /** What a value must be, after "must be" in errors and in the docs table. */
  readonly allowed: string;
  /** For a default that is no plain value (the docs print it instead of the value). */
  readonly defaultText?: string;
  /** The environment variable holds JSON. */
  readonly envJson?: boolean;
  /** Errors quote the value's own rule (an entry and field inside it) rather than `allowed`. */
  readonly nested?: boolean;
  /** Never echo the value in an error (it may hold a password). */
  readonly secret?: boolean;
}

/** How the loader's context changes defaults and rules. */
export interface SchemaContext {
  readonly mode: "dev" | "gateway";
  /** The default of configVersion: the config file's modification time (ms), null without a file. */
  readonly fileVersion: () => number | null;
}

// Every building block states its rule once: the text goes to metadata (docs) and to each issue (errors).
function ruleOf(schema: v.GenericSchema): string {
  const inner = "wrapped" in schema ? (schema.wrapped as v.GenericSchema) : schema;
  const { allowed } = v.getMetadata(inner) as { allowed?: string };
  if (!allowed) throw new Error(`no rule for a ${schema.type} setting`);
  return allowed;
}

/** An integer in [min, max], from a JSON number or a decimal string (env). */
const int = (min: number, max: number) => {
  const rule = `an integer from ${min} to ${max}`;
  const msg = `must be ${rule}`;
  return v.pipe(
    v.union([v.number(), v.pipe(v.string(), v.transform(Number))], msg),
    v.integer(msg),
    v.minValue(min, msg),
    v.maxValue(max, msg),
    v.metadata({ allowed: rule }),
  );
};

const text = () => v.pipe(v.string("must be a string"), v.metadata({ allowed: "a string" }));

const oneOf = <const T extends readonly [string, ...string[]]>(options: T) => {
  const rule = `one of ${options.join(", ")}`;
  return v.pipe(v.picklist(options, `must be ${rule}`), v.metadata({ allowed: rule }));
};

/** true/false in the file; 1/0 or true/false in env. */
const flag = () =>
  v.pipe(
    v.union([
      v.boolean(),
      v.pipe(
        v.picklist(["1", "0", "true", "false"]),
        v.transform((s) => s === "1" || s === "true"),
      ),
    ]),
    v.metadata({ allowed: "true or false (1 or 0)" }),
  );

/** A port, or "off" (env) / null (file) for none. */
const portOrOff = () =>
  v.pipe(
    v.union([
      v.pipe(
        v.literal("off"),
        v.transform(() => null),
      ),
      v.null(),
      int(0, 65535),
    ]),
    v.metadata({ allowed: 'a port from 0 to 65535 or "off"' }),
  );

const url = (schemes: readonly string[]) => {
  const rule = `a ${schemes.map((s) => `${s}//`).join(" or ")} URL`;
  return v.pipe(
    v.string(),
    v.check((s) => URL.canParse(s) && schemes.includes(new URL(s).protocol), `must be ${rule}`),
    v.metadata({ allowed: rule }),
  );
};

const redisPrefix = () =>
  v.pipe(
    v.string(),
    v.maxLength(64),
    v.regex(/^[^{}]*$/),
    v.metadata({ allowed: "1 to 64 characters without braces" }),
  );

const tokens = () =>
  v.pipe(
    v.unknown(),
    v.rawTransform(({ dataset, addIssue, NEVER }): readonly TokenEntry[] => {
      try {
        return parseTokens(dataset.value);
      } catch (err) {
        addIssue({ message: (err as Error).message });
        return NEVER;
      }
    }),
    v.metadata({ allowed: "a JSON array of { name, role, queues?, sha256 }" }),
  );

/** Issues of a file object: not one, an unknown key, a key missing. */
const objectIssue = (issue: v.ObjectIssue | v.StrictObjectIssue): string =>
  issue.expected === "never"
    ? `unknown setting "${String(issue.input)}"`
    : issue.expected?.startsWith('"')
      ? `needs ${issue.expected}`
      : "must be an object";

const queues = () => {
  const rule = '{ "<queue>": { "throttle": { "limit", "period_ms" } } }';
  const throttle = v.strictObject({ limit: int(1, 100_000), period_ms: int(1000, 86_400_000) }, objectIssue);
  return v.pipe(
    v.record(
      v.pipe(
        v.string(),
        v.regex(QUEUE_NAME, (issue) => `"${issue.input}" is not a queue name (${QUEUE_NAME.source})`),
      ),
      v.strictObject({ throttle: v.optional(throttle) }, objectIssue),
      "must be an object",
    ),
    v.metadata({ allowed: rule }),
  );
};

/** A Redis URL: one server, or a Redis Cluster's seed nodes (see redis-url.ts). */
const redisUrl = () => {
  const rule = "a redis://, rediss://, redis+cluster:// or rediss+cluster:// URL";
  return v.pipe(
    v.string(),
    v.check((s) => {
      try {
        parseRedisUrl(s);
        return true;
      } catch {
        return false;
      }
    }, `must be ${rule}`),
    v.metadata({ allowed: rule }),
  );
};

const wholeNumber = () =>
  v.pipe(
    v.number("must be a whole number from 0"),
    v.safeInteger("must be a whole number from 0"),
    v.minValue(0, "must be a whole number from 0"),
    v.metadata({ allowed: "a whole number from 0" }),
  );

/** A setting's metadata as written below: `file` only where the file key is not the setting's name. */
type Described = Omit<SettingMeta, "allowed" | "file"> & { allowed?: string; file?: string };

/** A setting: its schema (with its default) plus where it comes from and what it is for. */
function setting<const S extends v.GenericSchema, const D extends v.Default<S, undefined>>(
  schema: S,
  fallback: D,
  meta: Described,
) {
  return v.pipe(v.optional(schema, fallback), v.metadata({ allowed: ruleOf(schema), ...meta }));
}

/** The same without a default: the loader says it is required (in this mode). */
function required<const S extends v.GenericSchema>(schema: S, meta: Described) {
  return v.pipe(schema, v.metadata({ allowed: ruleOf(schema), ...meta }));
}

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;

/** The values of logFormat. */
export const LOG_FORMATS = ["auto", "json", "text"] as const;

/** The gateway's settings in docs order. Env (TASKQ_*) wins over the config file; "" means unset. */
export function settingsSchema(ctx: SchemaContext) {
  const gateway = ctx.mode === "gateway";
  return {
    host: setting(text(), gateway ? "0.0.0.0" : "127.0.0.1", {
      env: "TASKQ_HOST",
      description: "The interface to bind.",
    }),
    grpcPort: setting(int(0, 65535), 7070, {
      env: "TASKQ_GRPC_PORT",
      description: "The HTTP/2 port: gRPC, and Connect or gRPC-Web over HTTP/2. 0 picks a free port.",
    }),
    httpPort: setting(int(0, 65535), 7071, {
      env: "TASKQ_HTTP_PORT",
      description:
        "The HTTP/1.1 port: Connect JSON, REST, the console, /healthz, /readyz, /metrics. 0 picks a free port.",
    }),
    maxConcurrentStreams: setting(int(1, 100_000), 1000, {
      env: "TASKQ_MAX_CONCURRENT_STREAMS",
      description: "HTTP/2 streams per connection.",
    }),
    reflection: setting(flag(), !gateway, {
      env: "TASKQ_REFLECTION",
      defaultText: "true in taskq dev, false in taskq gateway",
      description:
        "Serves gRPC server reflection (grpc.reflection.v1 and v1alpha) for grpcurl and the like; with tokens, any valid token may use it.",
    }),
    devPgPort: setting(portOrOff(), 7072, {
      env: "TASKQ_DEV_PG_PORT",
      description:
        "taskq dev only: a Postgres port in front of the embedded store, always on 127.0.0.1, any user let in. 0 picks a free port.",
    }),
    tlsCertFile: setting(v.nullable(text()), null, {
      env: "TASKQ_TLS_CERT_FILE",
      description:
        "PEM certificate chain, leaf first; with tlsKeyFile both ports speak TLS. Re-read when it changes.",
    }),
    tlsKeyFile: setting(v.nullable(text()), null, {
      env: "TASKQ_TLS_KEY_FILE",
      description: "PEM private key of tlsCertFile; both or neither.",
    }),
    tlsClientCaFile: setting(v.nullable(text()), null, {
      env: "TASKQ_TLS_CLIENT_CA_FILE",
      description: "PEM CA bundle for mutual TLS: clients need a certificate it signed. Needs tlsCertFile.",
    }),
    insecurePlaintext: setting(flag(), false, {
      env: "TASKQ_INSECURE_PLAINTEXT",
      description:
        "Lets taskq gateway serve plaintext on a non-loopback host (flag --insecure-plaintext), for a TLS-terminating load balancer.",
    }),
    databaseUrl: gateway
      ? required(url(["postgres:", "postgresql:"]), databaseUrlMeta)
      : setting(v.nullable(text()), null, databaseUrlMeta),
    databaseDirectUrl: setting(v.nullable(url(["postgres:", "postgresql:"])), null, {
      env: "TASKQ_DATABASE_DIRECT_URL",
      secret: true,
      defaultText: "databaseUrl",
      description:
        "Postgres without a transaction pooler in between, for what needs a session of its own: LISTEN and the migrations' advisory lock (one connection each).",
    }),
    dbPooler: setting(oneOf(["none", "transaction"]), "none", {
      env: "TASKQ_DB_POOLER",
      description:
        'What databaseUrl goes through: "transaction" for PgBouncer in pool_mode = transaction (the query timeout is then set inside each statement\'s transaction, not at connect; needs databaseDirectUrl).',
    }),
    dbPreparedStatements: setting(flag(), true, {
      env: "TASKQ_DB_PREPARED_STATEMENTS",
      description:
        "Named prepared statements, planned once per connection; false sends unnamed ones, for a pooler that cannot keep them (PgBouncer before 1.21, or without max_prepared_statements).",
    }),
    redisUrl: gateway
      ? required(redisUrl(), redisUrlMeta)
      : setting(v.nullable(redisUrl()), null, redisUrlMeta),
    redisPrefix: setting(redisPrefix(), "taskq:", {
      env: "TASKQ_REDIS_PREFIX",
      description: "Prefix of the limiter keys in Redis, so fleets or test runs can share one Redis.",
    }),
    dataDir: setting(text(), ".taskq/data", {
      env: "TASKQ_DATA_DIR",
      description: 'Where taskq dev keeps its embedded store (PGlite); "memory" keeps nothing.',
    }),
    dbPoolSize: setting(int(1, 1000), 10, {
      env: "TASKQ_DB_POOL_SIZE",
      description: "Pooled Postgres connections per gateway; LISTEN takes one more.",
    }),
    dbQueryTimeoutMs: setting(int(100, 3_600_000), 30_000, {
      env: "TASKQ_DB_QUERY_TIMEOUT_MS",
      description:
        "The longest one Postgres query may take, ms (migrations excepted); past it the call is UNAVAILABLE.",
    }),
    defaultLeaseMs: setting(int(100, 3_600_000), 30_000, {
      env: "TASKQ_DEFAULT_LEASE_MS",
      description: "Lease of jobs claimed by polls that ask for none, ms.",
    }),
    maxPayloadBytes: setting(int(1, 64 * 1024 * 1024), 1024 * 1024, {
      env: "TASKQ_MAX_PAYLOAD_BYTES",
      description: "The largest payload or result, bytes.",
    }),
    defaultMaxAttempts: setting(int(1, 1000), 25, {
      env: "TASKQ_DEFAULT_MAX_ATTEMPTS",
      description: "Attempts for jobs enqueued without max_attempts.",
    }),
    retryBaseMs: setting(int(0, 86_400_000), 1000, {
      env: "TASKQ_RETRY_BASE_MS",
      description: "The first retry backoff, ms; it doubles per attempt, jittered to 50-100%.",
    }),
    retryMaxMs: setting(int(0, 7 * 86_400_000), 3_600_000, {
      env: "TASKQ_RETRY_MAX_MS",
      description: "The longest retry backoff, ms; at least retryBaseMs.",
    }),
    retentionSeconds: setting(int(0, 365 * 86_400), 86_400, {
      env: "TASKQ_RETENTION_SECONDS",
      description:
        "How long finished jobs are kept, seconds: past it a job is hidden from every read, and dropped with its " +
        "day's partition of the history (up to a day later). 0: the settle that finishes a job deletes it " +
        "(one write per job instead of two); GetJob then finds no finished job, and a settle sent again after " +
        "it applied answers NOT_FOUND.",
    }),
    liveJobsVacuumRows: setting(int(0, 100_000_000), 20_000, {
      env: "TASKQ_LIVE_JOBS_VACUUM_ROWS",
      description:
        "The maintenance leader vacuums the table of live jobs once it holds this many dead rows (each job leaves " +
        "two) and nothing vacuumed it in the last minute: where autovacuum is off or busy elsewhere, every claim " +
        "would step over the index entries of the jobs claimed since. Where autovacuum runs it does this itself. " +
        "0: never.",
    }),
    maintenanceIntervalMs: setting(int(10, 60_000), 1000, {
      env: "TASKQ_MAINTENANCE_INTERVAL_MS",
      description: "The maintenance tick (lease rescue, promotion, TTL, cleanup, schedules), ms.",
    }),
    pausedRetryMs: setting(int(1, 60_000), 1000, {
      env: "TASKQ_PAUSED_RETRY_MS",
      description: "retry_after of a PAUSED verdict, ms: how soon a worker looks at a paused queue again.",
    }),
    maxRunningRetryMs: setting(int(1, 60_000), 50, {
      env: "TASKQ_MAX_RUNNING_RETRY_MS",
      description: "retry_after of a MAX_RUNNING verdict, ms (a slot frees whenever a job settles).",
    }),
    throttledFlushMs: setting(int(100, 60_000), 5000, {
      env: "TASKQ_THROTTLED_FLUSH_MS",
      description: "How often a gateway adds its counts of throttled verdicts to queue_counters, ms.",
    }),
    workerRecordsFlushMs: setting(int(100, 60_000), 5000, {
      env: "TASKQ_WORKER_RECORDS_FLUSH_MS",
      description:
        "How often a gateway writes its connected workers to the workers list, ms; a worker whose gateway stops writing drops out after 3 times this.",
    }),
    queues: setting(
      queues(),
      {},
      {
        env: null,
        nested: true,
        description:
          'Queues this file defines: a throttle here has source "config", is applied at start and the API refuses to change it.',
      },
    ),
    configVersion: setting(v.nullable(wholeNumber()), ctx.fileVersion, {
      env: null,
      file: "config_version",
      defaultText: "the file's modification time, ms",
      description:
        "The version of this file's queues: of gateways whose files disagree, the newest owns the config throttles.",
    }),
    tokens: setting(tokens(), [], {
      env: "TASKQ_TOKENS",
      envJson: true,
      nested: true,
      secret: true,
      description:
        "Bearer tokens (from taskq token new). taskq gateway refuses to start without any; taskq dev without any is open.",
    }),
    tokensFile: setting(v.nullable(text()), null, {
      env: "TASKQ_TOKENS_FILE",
      description:
        "A JSON file of tokens like tokens, watched: changes apply within a second. Not with tokens.",
    }),
    logLevel: setting(oneOf(LEVELS), "info", {
      env: "TASKQ_LOG_LEVEL",
      description: "The log level.",
    }),
    logFormat: setting(oneOf(LOG_FORMATS), "auto", {
      env: "TASKQ_LOG_FORMAT",
      description:
        "How logs go to stdout (flag --log-format): json, one JSON line (pino) per record; text, a start-up banner " +
        "with the addresses and one short line per record; auto, text on a terminal and json elsewhere.",
    }),
  };
}

const databaseUrlMeta: Described = {
  env: "TASKQ_DATABASE_URL",
  secret: true,
  description: "Postgres; the database must exist, the gateway creates its schema taskq in it.",
};

const redisUrlMeta: Described = {
  env: "TASKQ_REDIS_URL",
  secret: true,
  description:
    "Redis, for the fleet's limiters; redis+cluster://host:port,host:port (or rediss+cluster://) names a Redis Cluster's seed nodes. A user and password go before the host.",
};

/** Every setting plus the mode, which the command (taskq dev or taskq gateway) picks. */
export function configSchema(ctx: SchemaContext) {
  return v.object({ mode: v.picklist(["dev", "gateway"]), ...settingsSchema(ctx) });
}

/** Gateway settings, as loadConfig returns them (frozen). */
export type Config = v.InferOutput<ReturnType<typeof configSchema>>;

export type SettingName = keyof ReturnType<typeof settingsSchema>;

/** A setting's metadata, from its schema. */
export function settingMeta(name: string, schema: v.GenericSchema): SettingMeta {
  const meta = v.getMetadata(schema) as unknown as Described & { allowed: string };
  return { ...meta, file: meta.file ?? name };
}
