import { describe, expect, it, vi } from "vitest";
import { SERVICES } from "./local-services.js";
import { checkSources, repositorySources, serviceTestFiles } from "./service-guard.js";

describe("every test reaches Postgres and Redis through the guard", () => {
  it("holds for every test file and test helper in the repository", () => {
    const sources = repositorySources();
    expect(sources.length).toBeGreaterThan(100);
    const found = checkSources(sources).map((v) => `${v.file}:${v.line}: ${v.rule}\n    ${v.text}`);
    expect(found).toEqual([]);
  });

  it("lists the unit test files that reach a service, for the run without URLs", () => {
    const files = serviceTestFiles();
    expect(files).toContain("gateway/src/rpc/attempt-gateway.test.ts");
    expect(files).toContain("gateway/src/store/store.test.ts");
    expect(files).not.toContain("gateway/src/gates/throttle.cluster.test.ts");
    expect(files.every((f) => f.endsWith(".test.ts"))).toBe(true);
  });

  // Each rule, on a file that breaks it and on the same file mended.
  const rules = (file: string, text: string) => checkSources([{ file, text }]).map((v) => v.rule);
  const pg = SERVICES.postgres.env;
  const redis = SERVICES.redis.env;
  const test = "gateway/src/x.test.ts";
  const helper = "gateway/src/testing/helper.ts";
  it.each([
    [
      "a URL read from the environment",
      test,
      `const url = process.env.${pg};`,
      "names a service URL's variable",
    ],
    [
      "the other URL, in a helper",
      helper,
      `export const r = process.env.${redis};`,
      "names a service URL's variable",
    ],
    ["a local service's address", helper, `const u = "redis://127.0.0.1:6379";`, "default address"],
    ["ioredis on its default address", test, "const r = new Redis();", "opens Redis by hand"],
    [
      "the guard asked inside a test",
      test,
      'it("x", () => { if (!haveService("redis")) return; });',
      "inside a test",
    ],
    [
      "the postgres case of a .each table",
      test,
      'describe.each(["pglite", "postgres"] as const)("on %s", (engine) => { startTestGateway({ engine }); });',
      ".each over engines",
    ],
    [
      "a fresh database, never asked for",
      test,
      "beforeAll(async () => { db = await freshPostgres(); });",
      "without asking",
    ],
    [
      "a gateway on Postgres, never asked for",
      test,
      'beforeAll(async () => { gw = await startTestGateway({ engine: "postgres" }); });',
      "without asking",
    ],
  ])("flags %s", (_what, file, text, rule) => {
    expect(rules(file, text).some((r) => r.includes(rule))).toBe(true);
  });

  it("accepts the guarded forms", () => {
    const guarded = `
      for (const engine of engines) describe.skipIf(!engine.available())(engine.name, () => {});
      describe.skipIf(!(haveService("postgres") && haveService("redis")))("on Postgres", () => {
        beforeAll(async () => { gw = await startTestGateway({ engine: "postgres" }); r = testRedis(); });
      });
      it.each(["gateway", "migrate"])("taskq %s", () => {});
      const lazy = new Redis({ lazyConnect: true });`;
    expect(rules("gateway/src/x.test.ts", guarded)).toEqual([]);
  });
});

describe("the guard at run time", () => {
  // A fresh services.ts on a stubbed environment, as a test file without the URLs sees it.
  async function guard(env: Record<string, string>) {
    vi.resetModules();
    vi.stubEnv(SERVICES.postgres.env, env.postgres ?? "");
    vi.stubEnv(SERVICES.redis.env, env.redis ?? "");
    vi.stubEnv("TASKQ_TEST_REQUIRE_SERVICES", env.required ?? "");
    try {
      return await import("./services.js");
    } finally {
      vi.unstubAllEnvs();
    }
  }

  it("refuses a service the test file never asked for, even with its URL set", async () => {
    const g = await guard({ postgres: "postgres://u@db.invalid/x", redis: "redis://cache.invalid" });
    expect(() => g.serviceUrl("postgres")).toThrow(
      /without asking the guard: call haveService\("postgres"\)/,
    );
    expect(() => g.testServices.redisUrl).toThrow(/call haveService\("redis"\) first/);
    await expect(g.freshPostgres()).rejects.toThrow(/haveService\("postgres"\)/);
    expect(() => g.testRedis()).toThrow(/haveService\("redis"\)/);
    expect(g.haveService("postgres")).toBe(true);
    expect(g.testServices.postgresUrl).toBe("postgres://u@db.invalid/x");
  });

  it("refuses a service the guard said no to, and says no loudly", async () => {
    const g = await guard({});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      expect(g.haveService("postgres")).toBe(false);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining("SKIPPING Postgres tests"));
    } finally {
      warn.mockRestore();
    }
    expect(() => g.serviceUrl("postgres")).toThrow(/said no .* put it under describe\.skipIf/);
    const { startTestGateway } = await import("./test-gateway.js");
    await expect(startTestGateway({ engine: "postgres" })).rejects.toThrow(/haveService\("redis"\)/);
  });

  it("fails instead of skipping when services are required", async () => {
    const g = await guard({ required: "1" });
    expect(() => g.haveService("redis")).toThrow(/TASKQ_TEST_REQUIRE_SERVICES=1/);
  });

  it("refuses a command the test file never asked for", async () => {
    const g = await guard({});
    expect(() => g.requireCommand("redis-server")).toThrow(/haveCommand\("redis-server"/);
  });
});
