import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, ThrottleSource } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";
import { startTestGateway } from "./testing.js";

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
