import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import pg from "pg";
import { type Db, pgliteDb, postgresDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";

/**
 * Service URLs for tests come from the environment. Without them the tests that need a service are
 * skipped, loudly; with TASKQ_TEST_REQUIRE_SERVICES=1 (as CI sets) a missing service is a failure.
 */
export const testServices = {
  postgresUrl: process.env.TASKQ_TEST_DATABASE_URL,
  redisUrl: process.env.TASKQ_TEST_REDIS_URL,
};

const required = process.env.TASKQ_TEST_REQUIRE_SERVICES === "1";

/** True when the service is configured; otherwise warns (or throws when services are required). */
export function haveService(name: "postgres" | "redis"): boolean {
  const url = name === "postgres" ? testServices.postgresUrl : testServices.redisUrl;
  if (url) return true;
  const env = name === "postgres" ? "TASKQ_TEST_DATABASE_URL" : "TASKQ_TEST_REDIS_URL";
  return skipping(`${name} tests`, `${env} is not set`, `set ${env} to run them`);
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
  if (probe.status === 0) return true;
  return skipping(`tests that need ${command}`, `${command} is not installed`, remedy);
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
 * A fresh database of its own on the test Postgres, migrated unless `opts.migrated` is false; dropped by
 * the returned `drop()`.
 */
export async function freshPostgres(
  opts: { migrated?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = testServices.postgresUrl;
  if (!base) throw new Error("TASKQ_TEST_DATABASE_URL is not set");
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
