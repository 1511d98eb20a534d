import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, ThrottleSource } from "@taskq/sdk/proto";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { CONFIG_DOC, withConfigTable } from "../scripts/config-table.js";
import { loadConfig } from "./config.js";
import { settingMeta, settingsSchema } from "./config-schema.js";
import { ConfigError } from "./errors.js";
import { startTestGateway } from "./testing/test-gateway.js";

const file = (content: unknown) => {
  const path = join(mkdtempSync(join(tmpdir(), "taskq-config-")), "taskq.json");
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
};

describe("loadConfig", () => {
  it("defaults every setting, and env wins over the file", () => {
    const c = loadConfig("dev", { TASKQ_GRPC_PORT: "9000" }, file({ grpcPort: 8000, httpPort: 8001 }));
    expect(c).toMatchObject({
      mode: "dev",
      host: "127.0.0.1",
      grpcPort: 9000,
      httpPort: 8001,
      dbPoolSize: 10,
      dbQueryTimeoutMs: 30_000,
      redisPrefix: "taskq:",
    });
    expect(loadConfig("dev", { TASKQ_DB_QUERY_TIMEOUT_MS: "2000" }).dbQueryTimeoutMs).toBe(2000);
    expect(Object.isFrozen(c)).toBe(true);
    expect(loadConfig("dev", { TASKQ_REDIS_PREFIX: "ci-42:" }).redisPrefix).toBe("ci-42:");
  });

  it("opens the dev Postgres port on 7072 unless told another port, or off", () => {
    expect(loadConfig("dev", {}).devPgPort).toBe(7072);
    expect(loadConfig("dev", { TASKQ_DEV_PG_PORT: "0" }).devPgPort).toBe(0);
    expect(loadConfig("dev", { TASKQ_DEV_PG_PORT: "off" }, file({ devPgPort: 6000 })).devPgPort).toBeNull();
    expect(loadConfig("dev", {}, file({ devPgPort: null })).devPgPort).toBeNull();
    expect(() => loadConfig("dev", { TASKQ_DEV_PG_PORT: "psql" })).toThrow(
      'devPgPort (TASKQ_DEV_PG_PORT) must be a port from 0 to 65535 or "off", got "psql"',
    );
  });

  it("logs as auto decides (text on a terminal) unless told json or text", () => {
    expect(loadConfig("dev", {}).logFormat).toBe("auto");
    expect(loadConfig("dev", { TASKQ_LOG_FORMAT: "json" }, file({ logFormat: "text" })).logFormat).toBe(
      "json",
    );
    expect(loadConfig("dev", {}, file({ logFormat: "text" })).logFormat).toBe("text");
    expect(() => loadConfig("dev", { TASKQ_LOG_FORMAT: "yaml" })).toThrow(
      'logFormat (TASKQ_LOG_FORMAT) must be one of auto, json, text, got "yaml"',
    );
  });

  it.each([
    [
      { TASKQ_GRPC_PORT: "70000" },
      undefined,
      /grpcPort \(TASKQ_GRPC_PORT\) must be an integer from 0 to 65535/,
    ],
    [{ TASKQ_DB_POOL_SIZE: "lots" }, undefined, /dbPoolSize \(TASKQ_DB_POOL_SIZE\)/],
    [
      { TASKQ_DB_QUERY_TIMEOUT_MS: "50" },
      undefined,
      /dbQueryTimeoutMs \(TASKQ_DB_QUERY_TIMEOUT_MS\) must be an integer from 100 to 3600000/,
    ],
    [{ TASKQ_LOG_LEVEL: "loud" }, undefined, /logLevel \(TASKQ_LOG_LEVEL\) must be one of/],
    [{}, { nonsense: 1 }, /unknown setting "nonsense"/],
    [
      { TASKQ_REDIS_PREFIX: "a{b}:" },
      undefined,
      /redisPrefix \(TASKQ_REDIS_PREFIX\) must be 1 to 64 characters without braces/,
    ],
    [{ TASKQ_REDIS_PREFIX: "x".repeat(65) }, undefined, /redisPrefix \(TASKQ_REDIS_PREFIX\)/],
    [{}, "{not json", /config file .*taskq.json/],
    [{}, { queues: { "bad name": {} } }, /"bad name" is not a queue name/],
    [
      {},
      { queues: { q: { throttle: { limit: 0, period_ms: 1000 } } } },
      /queues.q.throttle.limit must be an integer from 1 to 100000/,
    ],
    [{}, { queues: { q: { throttle: { limit: 1, period_ms: 999 } } } }, /queues.q.throttle.period_ms/],
  ])("refuses %j %j naming the setting", (env, content, message) => {
    expect(() => loadConfig("dev", env, content === undefined ? undefined : file(content))).toThrow(message);
  });

  it("versions the queues config: config_version as given, else the file's modification time", () => {
    expect(loadConfig("dev", {}, file({ config_version: 7 })).configVersion).toBe(7);
    const path = file({ queues: {} });
    const stamped = loadConfig("dev", {}, path).configVersion;
    expect(stamped).toBeGreaterThan(Date.now() - 60_000);
    expect(stamped).toBeLessThanOrEqual(Date.now());
    expect(loadConfig("dev", {}).configVersion).toBeNull();
    expect(() => loadConfig("dev", {}, file({ config_version: -1 }))).toThrow(/config_version/);
    expect(() => loadConfig("dev", {}, file({ config_version: "2" }))).toThrow(/config_version/);
  });

  it("requires Postgres and Redis URLs in gateway mode", () => {
    expect(() => loadConfig("gateway", {})).toThrow(/databaseUrl \(TASKQ_DATABASE_URL\) is required/);
    expect(() => loadConfig("gateway", { TASKQ_DATABASE_URL: "postgres://x/y" })).toThrow(/TASKQ_REDIS_URL/);
    expect(() =>
      loadConfig("gateway", { TASKQ_DATABASE_URL: "mysql://x/y", TASKQ_REDIS_URL: "redis://x" }),
    ).toThrow("databaseUrl (TASKQ_DATABASE_URL) must be a postgres:// or postgresql:// URL");
  });

  it("reads a pooled database URL beside a direct one, and a Redis Cluster's seed nodes", () => {
    const env = {
      TASKQ_DATABASE_URL: "postgres://taskq@pgbouncer:6432/taskq",
      TASKQ_DATABASE_DIRECT_URL: "postgres://taskq@db:5432/taskq",
      TASKQ_DB_POOLER: "transaction",
      TASKQ_DB_PREPARED_STATEMENTS: "false",
      TASKQ_REDIS_URL: "rediss+cluster://taskq:pw@r1:6379,r2:6379",
    };
    const c = loadConfig("dev", env);
    expect([c.databaseDirectUrl, c.dbPooler, c.dbPreparedStatements]).toEqual([
      "postgres://taskq@db:5432/taskq",
      "transaction",
      false,
    ]);
    expect(c.redisUrl).toBe("rediss+cluster://taskq:pw@r1:6379,r2:6379");
    expect(loadConfig("dev", {})).toMatchObject({
      databaseDirectUrl: null,
      dbPooler: "none",
      dbPreparedStatements: true,
    });
    expect(() => loadConfig("dev", { ...env, TASKQ_DATABASE_DIRECT_URL: "" })).toThrow(
      /dbPooler \(TASKQ_DB_POOLER\) transaction needs databaseDirectUrl \(TASKQ_DATABASE_DIRECT_URL\)/,
    );
    expect(() => loadConfig("dev", { ...env, TASKQ_DB_POOLER: "session" })).toThrow(
      /dbPooler \(TASKQ_DB_POOLER\) must be one of none, transaction/,
    );
    expect(() => loadConfig("dev", { ...env, TASKQ_REDIS_URL: "redis+cluster://r1:6379,r2" })).toThrow(
      "redisUrl (TASKQ_REDIS_URL) must be a redis://, rediss://, redis+cluster:// or rediss+cluster:// URL",
    );
  });
});

describe("the config schema", () => {
  const inDev = settingsSchema({ mode: "dev", fileVersion: () => null });
  const settings = Object.entries(inDev).map(([name, schema]) => ({
    name,
    schema,
    ...settingMeta(name, schema),
  }));
  // Whole-file structures with no environment variable; every other setting has one.
  const fileOnly = ["queues", "configVersion"];

  it("gives every setting an env name, a file key, a default, an allowed rule and a description", () => {
    expect(settings.length).toBeGreaterThan(25);
    for (const s of settings) {
      expect(s.file, s.name).toMatch(/^[a-z][A-Za-z_]+$/);
      if (fileOnly.includes(s.name)) expect(s.env, s.name).toBeNull();
      else expect(s.env, s.name).toMatch(/^TASKQ_[A-Z0-9_]+$/);
      expect(s.description.length, s.name).toBeGreaterThan(10);
      expect(s.allowed.length, s.name).toBeGreaterThan(3);
      expect(v.getDefault(s.schema), s.name).not.toBeUndefined();
    }
    const envNames = settings.flatMap((s) => (s.env ? [s.env] : []));
    expect(new Set(envNames).size).toBe(envNames.length);
    expect(new Set(settings.map((s) => s.file)).size).toBe(settings.length);
  });

  it("is what loadConfig defaults to", () => {
    const loaded = loadConfig("dev", {}) as unknown as Record<string, unknown>;
    for (const s of settings) expect(loaded[s.name], s.name).toEqual(v.getDefault(s.schema));
    expect(
      loadConfig("gateway", { TASKQ_DATABASE_URL: "postgres://x/y", TASKQ_REDIS_URL: "redis://x" }).host,
    ).toBe("0.0.0.0");
  });

  /** The schema's [min, max] of an integer setting, read from its pipe. */
  const range = (name: string): [number, number] => {
    const requirement = (type: string) => {
      const walk = (node: unknown): number | undefined => {
        if (typeof node !== "object" || node === null) return undefined;
        const n = node as { type?: string; requirement?: number; pipe?: unknown[]; wrapped?: unknown };
        if (n.type === type) return n.requirement;
        for (const child of [n.wrapped, ...(n.pipe ?? [])]) {
          const found = child === node ? undefined : walk(child);
          if (found !== undefined) return found;
        }
        return undefined;
      };
      const found = walk(inDev[name as keyof typeof inDev]);
      if (found === undefined) throw new Error(`${name} has no ${type}`);
      return found;
    };
    return [requirement("min_value"), requirement("max_value")];
  };

  it.each(["dbPoolSize", "maintenanceIntervalMs", "throttledFlushMs", "grpcPort"])(
    "enforces the schema's range of %s, naming the env var",
    (name) => {
      const s = settings.find((x) => x.name === name);
      const envName = s?.env;
      if (!s || !envName) throw new Error(`${name} is not an env setting`);
      const [min, max] = range(name);
      const rule = `${s.file} (${envName}) must be an integer from ${min} to ${max}`;
      for (const bad of [min - 1, max + 1]) {
        expect(() => loadConfig("dev", { [envName]: String(bad) })).toThrow(ConfigError);
        expect(() => loadConfig("dev", { [envName]: String(bad) })).toThrow(`${rule}, got "${bad}"`);
        expect(() => loadConfig("dev", {}, file({ [s.file]: bad }))).toThrow(`${rule}, got ${bad}`);
      }
      const key = name as "dbPoolSize";
      expect(loadConfig("dev", { [envName]: String(min) })[key]).toBe(min);
      expect(loadConfig("dev", { [envName]: String(max) })[key]).toBe(max);
    },
  );

  it("never echoes a secret in an error", () => {
    const env = { TASKQ_DATABASE_URL: "mysql://u:hunter2@db/x", TASKQ_REDIS_URL: "redis://x" };
    expect(() => loadConfig("gateway", env)).toThrow(
      /^databaseUrl \(TASKQ_DATABASE_URL\) must be a postgres/,
    );
    expect(() => loadConfig("gateway", env)).not.toThrow(/hunter2/);
  });

  it(`matches the settings table of ${CONFIG_DOC}`, () => {
    const doc = readFileSync(new URL(`../../${CONFIG_DOC}`, import.meta.url), "utf8");
    expect(
      withConfigTable(doc) === doc,
      `the settings table of ${CONFIG_DOC} is stale: run npm run docs:config and commit it`,
    ).toBe(true);
  });
});

describe("config-sourced throttles", () => {
  it("are applied at start, refused by the API (FAILED_PRECONDITION), and removed when a newer config drops them", async () => {
    const queues = { mail: { throttle: { limit: 5, period_ms: 60_000 } } };
    // A restart on the same data, with the throttle gone from the config.
    const dir = mkdtempSync(join(tmpdir(), "taskq-data-"));
    const first = await startTestGateway({ config: { queues, configVersion: 1 }, dataDir: dir });
    const admin = createClient(AdminService, createTransport({ baseUrl: first.grpcUrl }));
    const got = await admin.getQueue({ queue: "mail" });
    expect(got.queue?.throttle).toMatchObject({ limit: 5, periodMs: 60_000, source: ThrottleSource.CONFIG });
    const refused = await admin.setQueueThrottle({ queue: "mail", limit: 1, periodMs: 1000 }).catch((e) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.FailedPrecondition);
    await first.stop();

    const second = await startTestGateway({ config: { queues: {}, configVersion: 2 }, dataDir: dir });
    const after = await createClient(AdminService, createTransport({ baseUrl: second.grpcUrl })).getQueue({
      queue: "mail",
    });
    expect(after.queue?.throttle).toBeUndefined();
    await second.stop();
  });
});
