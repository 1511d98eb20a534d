import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { Redis, type RedisOptions } from "ioredis";
import pg from "pg";
import { inject } from "vitest";
import { type Db, pgliteDb, postgresDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import {
  commandWith,
  LOCAL_SERVICES_KEY,
  type LocalServices,
  SERVICES,
  type Service,
} from "./local-services.js";

/**
 * The one guard between tests and the services they need. Service URLs for tests come from the
 * environment (TASKQ_TEST_DATABASE_URL, TASKQ_TEST_REDIS_URL) and are read here only. A test asks
 * {@link haveService} at collection time (`describe.skipIf(!haveService("postgres"))`): without the URL
 * it is skipped, loudly; with TASKQ_TEST_REQUIRE_SERVICES=1 (as CI sets) a missing service is a failure.
 *
 * Every helper that reaches a service (freshPostgres, the postgres engine, startTestGateway on
 * Postgres, testRedis, the cluster harness, PgBouncer, local Redis servers) takes the guard's answer
 * through {@link serviceUrl} or {@link requireCommand}, and throws when the test file never asked or
 * was told no. So a test that forgets the guard fails where the URLs are set (CI) instead of failing
 * only on a newcomer's bare clone; service-guard.test.ts holds the test sources to the same rule.
 */

const urls: Record<Service, string | undefined> = {
  postgres: process.env.TASKQ_TEST_DATABASE_URL || undefined,
  redis: process.env.TASKQ_TEST_REDIS_URL || undefined,
};

const required = process.env.TASKQ_TEST_REQUIRE_SERVICES === "1";

// What the guard answered in this test file, by service ("postgres", "redis") or "command:<name>".
// vitest gives each test file a module graph of its own, so one file's answers never leak into another.
const answers = new Map<string, boolean>();

/** True when the service is configured; otherwise warns (or throws when services are required). */
export function haveService(name: Service): boolean {
  const { label, env } = SERVICES[name];
  const ok = urls[name] !== undefined || skipping(`${label} tests`, `${env} is not set`, remedy(name));
  answers.set(name, ok);
  return ok;
}

/**
 * The URL of `name`, once {@link haveService} said yes in this test file: the one way a test or helper
 * reaches a test service. Throws, naming the fix, when the guard was not asked or said no.
 */
export function serviceUrl(name: Service): string {
  const { label, env } = SERVICES[name];
  const answer = answers.get(name);
  const url = urls[name];
  if (answer === true && url !== undefined) return url;
  if (answer === undefined)
    throw new Error(
      `a test reached ${label} without asking the guard: call haveService("${name}") first, as ` +
        `describe.skipIf(!haveService("${name}"))(...) or it.skipIf, so it is skipped where ${env} is not set`,
    );
  throw new Error(
    `haveService("${name}") said no (${env} is not set), yet a test reached ${label}: ` +
      `put it under describe.skipIf(!haveService("${name}"))(...)`,
  );
}

/** The test services' URLs, read through the guard ({@link serviceUrl}): reading one the guard did not grant throws. */
export const testServices = {
  get postgresUrl(): string {
    return serviceUrl("postgres");
  },
  get redisUrl(): string {
    return serviceUrl("redis");
  },
};

/** An ioredis client on the test Redis, through the guard; the caller quits it. */
export function testRedis(opts: RedisOptions = {}): Redis {
  return new Redis(serviceUrl("redis"), opts);
}

/** What to do about a missing service: set its variable, with the exact command when it answers locally. */
function remedy(name: Service): string {
  const env = SERVICES[name].env;
  const local = localServices();
  if (!local?.answering.includes(name)) return `set ${env} to run them`;
  const port = SERVICES[name].port;
  return `${SERVICES[name].label} answers on 127.0.0.1:${port}; to run them there: ${commandWith(local.answering, local.command)}`;
}

/** What the global setup (global-setup.ts) found on the default local ports; undefined outside vitest. */
function localServices(): LocalServices | undefined {
  if (!process.env.VITEST) return undefined;
  try {
    return inject(LOCAL_SERVICES_KEY);
  } catch {
    return undefined;
  }
}

/**
 * Debian's python3, which carries grpcio and grpc_tools where a pyenv python3 earlier on PATH may not.
 * The Python examples and the documented protoc line run with it.
 */
export const debianPython = "/usr/bin/python3";

/**
 * True when {@link debianPython} imports grpcio and grpc_tools; otherwise warns (or throws when
 * services are required), so a machine with only Node, Postgres and Redis still passes `npm test`.
 */
export function havePythonGrpc(): boolean {
  const probe = spawnSync(debianPython, ["-c", "import grpc, grpc_tools"], { stdio: "ignore" });
  if (probe.status === 0) return true;
  return skipping(
    "Python gRPC tests",
    `${debianPython} cannot import grpc and grpc_tools`,
    "install python3-grpcio and python3-grpc-tools (Debian) to run them",
  );
}

/**
 * True when `command --version` runs (redis-server and redis-cli for a local Redis Cluster, pgbouncer
 * for a pooler); otherwise warns (or throws when services are required).
 */
export function haveCommand(command: string, remedy: string): boolean {
  const probe = spawnSync(command, ["--version"], { stdio: "ignore" });
  const ok =
    probe.status === 0 || skipping(`tests that need ${command}`, `${command} is not installed`, remedy);
  answers.set(`command:${command}`, ok);
  return ok;
}

/**
 * Throws unless {@link haveCommand} said yes for `command` in this test file: the helpers that start
 * their own PgBouncer or redis-server call it, so a test that needs one is skipped where it is missing.
 */
export function requireCommand(command: string): void {
  const answer = answers.get(`command:${command}`);
  if (answer === true) return;
  throw new Error(
    answer === undefined
      ? `a test starts ${command} without asking the guard: call haveCommand("${command}", remedy) first, in describe.skipIf`
      : `haveCommand("${command}") said no, yet a test starts it: put it under describe.skipIf(!haveCommand(...))`,
  );
}

/** Debian's Go sources (grpc-go, protobuf-go), which a GOPATH-mode build (modules off) finds its imports in. */
export const debianGoPath = "/usr/share/gocode";

/**
 * True when Go, protoc with its Go and gRPC plugins, and Debian's grpc-go sources are installed;
 * otherwise warns (or throws when services are required), so a machine without Go still passes `npm test`.
 */
export function haveGo(): boolean {
  const tools = ["go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc"];
  const missing = tools.filter(
    (t) => spawnSync("sh", ["-c", `command -v ${t}`], { stdio: "ignore" }).status !== 0,
  );
  if (!existsSync(`${debianGoPath}/src/google.golang.org/grpc`)) missing.push(`${debianGoPath} (grpc-go)`);
  if (missing.length === 0) return true;
  return skipping(
    "Go tests",
    `${missing.join(", ")} missing`,
    "install golang-go golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev protobuf-compiler protoc-gen-go protoc-gen-go-grpc (Debian) to run them",
  );
}

/** Warns loudly that `what` is skipped and returns false; with TASKQ_TEST_REQUIRE_SERVICES=1, throws. */
function skipping(what: string, because: string, remedy: string): false {
  if (required) throw new Error(`${because} but TASKQ_TEST_REQUIRE_SERVICES=1: ${what} cannot be skipped`);
  console.warn(`\n*** SKIPPING ${what} (${because}): ${remedy} ***\n`);
  return false;
}

/**
 * A fresh database of its own on the test Postgres (through the guard), migrated unless `opts.migrated` is false; dropped by
 * the returned `drop()`.
 */
export async function freshPostgres(
  opts: { migrated?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = serviceUrl("postgres");
  const name = `taskq_test_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  if (opts.migrated !== false) {
    const db = postgresDb({ url: url.toString(), poolSize: 2 });
    await migrate(db);
    await db.close();
  }
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** A database handle on one engine the store supports. */
export interface TestEngine {
  name: string;
  available: () => boolean;
  open: () => Promise<{ db: Db; close: () => Promise<void> }>;
}

/** A database handle for each engine the store supports, migrated unless `opts.migrated` is false. */
export function testEngines(opts: { migrated?: boolean } = {}): TestEngine[] {
  const migrated = opts.migrated !== false;
  return [
    {
      name: "pglite",
      available: () => true,
      open: async () => {
        const db = await pgliteDb();
        if (migrated) await migrate(db);
        return { db, close: () => db.close() };
      },
    },
    {
      name: "postgres",
      available: () => haveService("postgres"),
      open: async () => {
        const fresh = await freshPostgres({ migrated });
        const db = postgresDb({ url: fresh.url, poolSize: 8 });
        return {
          db,
          close: async () => {
            await db.close();
            await fresh.drop();
          },
        };
      },
    },
  ];
}

/** A migrated database handle for each engine, for suites that run on both. */
export const engines = testEngines();

/**
 * Gives queues a settings row (every gate off, no audit row), as if seen before: operator verbs refuse
 * a queue never seen, and a test may set one up before its first job.
 */
export async function knownQueues(db: Db, ...names: string[]): Promise<void> {
  await db.query(
    { name: "", text: "insert into taskq.queues (name) select unnest($1::text[]) on conflict do nothing" },
    [names],
  );
  await db.query({ name: "", text: "select taskq.note_queues($1::text[])" }, [names]);
}
