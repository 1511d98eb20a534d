#!/usr/bin/env node
import { parseArgs } from "node:util";
import { operatorGroup, operatorUsage, runOperator } from "./cli/main.js";
import { exitQuietlyOnClosedPipe } from "./cli/pipe.js";
import { type Config, loadConfig } from "./config.js";
import { LOG_FORMATS } from "./config-schema.js";
import { ConfigError } from "./errors.js";

// The server modules load only for dev, gateway and migrate, so operator verbs start fast.
const serverModules = async () => ({
  ...(await import("./log.js")),
  ...(await import("./cli/banner.js")),
  ...(await import("./server.js")),
  ...(await import("./server/open-db.js")),
  ...(await import("./store/migrate.js")),
  ...(await import("./server/young-garbage.js")),
});

const usage = `taskq — a gRPC worker gateway with claim-time flow control

Usage: taskq <command> [options]

Commands:
  dev        Start one gateway on the embedded store (PGlite in TASKQ_DATA_DIR, default .taskq/data).
             No Postgres or Redis needed; psql reaches the store on TASKQ_DEV_PG_PORT (127.0.0.1:7072).
             One gateway per data folder. Not for production.
  gateway    Start a production gateway on TASKQ_DATABASE_URL (Postgres) and TASKQ_REDIS_URL (Redis);
             run as many instances as you like on the same two. Needs bearer tokens (TASKQ_TOKENS or
             the config file's "tokens"; make them with "taskq token new").
  migrate    Apply pending database migrations to TASKQ_DATABASE_URL and exit.

Operator commands (talk to a running gateway at --url or TASKQ_URL, default http://127.0.0.1:7070,
with --token or TASKQ_TOKEN; an https:// gateway with a private CA needs --ca-file or TASKQ_CA_FILE, and
one with mutual TLS --cert-file and --key-file; --json prints responses as protobuf JSON):
${operatorUsage()}
Run "taskq <command> --help" for its verbs and flags.

Options:
  --config <file>        JSON config file (keys as in docs/configuration.md); TASKQ_* environment variables win over it.
  --insecure-plaintext   gateway: serve plaintext on a non-loopback host (a TLS-terminating load balancer
                         is in front); without it, such a host needs TASKQ_TLS_CERT_FILE and TASKQ_TLS_KEY_FILE.
                         Same as TASKQ_INSECURE_PLAINTEXT=1. See docs/security.md.
  --log-format <format>  dev, gateway: json (a JSON line per log record), text (a banner with the addresses,
                         then a short line per record) or auto (text on a terminal, else json; the default).
                         Same as TASKQ_LOG_FORMAT.
  -h, --help             Show help.

Environment: TASKQ_GRPC_PORT (7070), TASKQ_HTTP_PORT (7071), TASKQ_HOST, TASKQ_DATABASE_URL,
TASKQ_REDIS_URL, TASKQ_DATA_DIR, TASKQ_DEV_PG_PORT, TASKQ_LOG_LEVEL, TASKQ_LOG_FORMAT,
TASKQ_TLS_CERT_FILE, TASKQ_TLS_KEY_FILE, TASKQ_TLS_CLIENT_CA_FILE, TASKQ_TOKENS_FILE, and the rest in
docs/configuration.md.
`;

async function main(argv: string[]): Promise<number> {
  exitQuietlyOnClosedPipe(process.stdout);
  exitQuietlyOnClosedPipe(process.stderr);
  if (operatorGroup(argv[0])) {
    return runOperator(argv, { stdout: process.stdout, stderr: process.stderr, env: process.env });
  }
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: "string" },
      "insecure-plaintext": { type: "boolean" },
      "log-format": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    process.stdout.write(usage);
    return command || values.help ? 0 : 2;
  }
  if (rest.length > 0) {
    process.stderr.write(`taskq ${command}: unexpected argument "${rest[0]}"\n`);
    return 2;
  }
  switch (command) {
    case "dev":
    case "gateway":
      return serve(command, values.config, flagSettings(values));
    case "migrate": {
      const { createLogger, logFormatFor, openDb, migrate } = await serverModules();
      const config = loadConfig(
        "gateway",
        { TASKQ_REDIS_URL: "redis://unused", ...process.env },
        values.config,
      );
      const format = flagSettings(values).logFormat ?? config.logFormat;
      const log = createLogger(config.logLevel, logFormatFor(format, process.stdout.isTTY === true));
      const db = await openDb(config, log);
      const versions = await migrate(db);
      await db.close();
      process.stdout.write(
        versions.length ? `applied migrations ${versions.join(", ")}\n` : "schema is up to date\n",
      );
      return 0;
    }
    default:
      process.stderr.write(`taskq: unknown command "${command}"\n\n${usage}`);
      return 2;
  }
}

/** Settings given as flags, which win over the environment and the config file. */
function flagSettings(values: { "insecure-plaintext"?: boolean; "log-format"?: string }): Partial<Config> {
  const format = values["log-format"];
  if (format !== undefined && !(LOG_FORMATS as readonly string[]).includes(format)) {
    throw new ConfigError(
      `--log-format must be one of ${LOG_FORMATS.join(", ")}, got ${JSON.stringify(format)}`,
    );
  }
  return {
    ...(values["insecure-plaintext"] ? { insecurePlaintext: true } : {}),
    ...(format ? { logFormat: format as Config["logFormat"] } : {}),
  };
}

async function serve(
  mode: "dev" | "gateway",
  file: string | undefined,
  flags: Partial<Config>,
): Promise<number> {
  const m = await serverModules();
  m.keepShortLivedObjectsYoung();
  const config = Object.freeze({ ...loadConfig(mode, process.env, file), ...flags });
  const format = m.logFormatFor(config.logFormat, process.stdout.isTTY === true);
  // On a terminal the banner below says what the listening line would, whatever the log level.
  const log = m.createLogger(config.logLevel, format, [m.LISTENING]);
  if (mode === "dev") {
    log.warn(
      { dataDir: m.embeddedDataDir(config) },
      "dev mode: embedded PGlite store, in-process limits — not for production",
    );
  }
  const gateway = await m.startGateway(config, log);
  if (format === "text") {
    const { grpcUrl, httpUrl, devPgUrl, open } = gateway;
    const dataDir = m.embeddedDataDir(config);
    process.stdout.write(m.formatBanner({ mode, grpcUrl, httpUrl, devPgUrl, dataDir, open }));
  }
  await new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      log.info({ signal }, "shutting down");
      resolve();
    };
    process.once("SIGINT", shutdown);
    process.once("SIGTERM", shutdown);
  });
  await gateway.stop();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    // Whatever a failed command left open (a connection still being made) must not keep it running.
    setTimeout(() => process.exit(), 3000).unref();
    if (err instanceof ConfigError || (err as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      process.stderr.write(`taskq: ${(err as Error).message}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`taskq: ${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  },
);
