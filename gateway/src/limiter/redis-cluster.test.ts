import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalRedisCluster, startRedisCluster } from "../testing/redis-cluster.js";
import { haveCommand } from "../testing/services.js";
import { RedisLimiter, SCRIPTS } from "./redis-limiter.js";
import { parseRedisUrl, redisClient } from "./redis-url.js";

const haveRedis = haveCommand("redis-server", "install redis-server (Debian) to run the Redis Cluster tests");

// Every Lua script on a real three-node cluster: a script whose keys hash to different slots fails
// there with CROSSSLOT (or "non local key") and nowhere else.
describe.runIf(haveRedis)("the limiter on a Redis Cluster", () => {
  let cluster: LocalRedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("runs every Lua script, on keys spread over all three nodes, without CROSSSLOT", async () => {
    const prefix = `t${randomBytes(4).toString("hex")}:`;
    const client = redisClient(cluster.url, { maxRetriesPerRequest: 1 });
    const limiter = new RedisLimiter(client, { prefix });
    // Each script's command, as defineCommand made it, records that it ran.
    const used = new Set<string>();
    const commands = client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    for (const name of Object.keys(SCRIPTS)) {
      const fn = commands[name];
      if (!fn) throw new Error(`script ${name} is not defined on the client`);
      commands[name] = (...a: unknown[]) => {
        used.add(name);
        return fn.apply(client, a);
      };
    }
    try {
      const queues = Array.from({ length: 24 }, (_, i) => `q${i}`);
      for (const q of queues) {
        const t = await limiter.throttleTake(q, 1000);
        expect(t.admitted).toBe(true);
        if (t.admitted) await limiter.throttleConfirm(q, t.token);
        const again = await limiter.throttleTake(q, 1000);
        expect(again.admitted).toBe(false);
        const u = await limiter.throttleTake(`${q}-refunded`, 1000);
        if (u.admitted) await limiter.throttleRefund(`${q}-refunded`, u.token);
        expect((await limiter.throttleTake(`${q}-refunded`, 1000)).admitted).toBe(true);
        expect((await limiter.rateTake(q, 60, 2, 2)).admitted).toBe(2);
        expect((await limiter.rateTake(q, 60, 2, 1)).admitted).toBe(0);
        await limiter.rateRefund(q, 60, 1);
        expect((await limiter.rateTake(q, 60, 2, 1)).admitted).toBe(1);
        const start = Date.now();
        expect((await limiter.rampTake(q, start, 60_000, 600, 1)).admitted).toBe(1);
        await limiter.rampRefund(q, start, 1);
        await limiter.throttleReset(q);
        await limiter.rateReset(q);
      }
      expect([...used].sort()).toEqual(Object.keys(SCRIPTS).sort());
      // The keys landed on every node, so each script ran on more than one of them.
      const masters = (client as Cluster).nodes("master");
      expect(masters).toHaveLength(3);
      const counts = await Promise.all(masters.map((n: Redis) => n.keys(`${prefix}*`)));
      for (const keys of counts) expect(keys.length).toBeGreaterThan(0);
    } finally {
      await limiter.close();
    }
  });

  it("keeps each script's keys in one hash slot: every script file takes exactly one key", () => {
    for (const file of Object.values(SCRIPTS)) {
      expect(file).toMatch(/-1\.lua$/);
      const lua = readFileSync(new URL(`./lua/${file}`, import.meta.url), "utf8");
      // Keys a script builds itself are not declared, so a cluster cannot route them: only KEYS[1].
      expect(lua.match(/KEYS\[(\d+)\]/g)?.every((k) => k === "KEYS[1]")).toBe(true);
    }
  });
});

describe("TASKQ_REDIS_URL", () => {
  it("reads a cluster's seed nodes, user and password, and TLS", () => {
    expect(parseRedisUrl("redis+cluster://a:7000,b.example:7001")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "a", port: 7000 },
        { host: "b.example", port: 7001 },
      ],
      tls: false,
    });
    expect(parseRedisUrl("rediss+cluster://taskq:p%40ss@[::1]:7000/")).toEqual({
      kind: "cluster",
      nodes: [{ host: "::1", port: 7000 }],
      username: "taskq",
      password: "p@ss",
      tls: true,
    });
    expect(parseRedisUrl("rediss://:secret@cache:6380/2")).toEqual({
      kind: "server",
      url: "rediss://:secret@cache:6380/2",
    });
  });

  it("refuses a seed node without a port, and other schemes", () => {
    expect(() => parseRedisUrl("redis+cluster://a:7000,b")).toThrow(/host:port, got "b"/);
    expect(() => parseRedisUrl("http://cache:6379")).toThrow(/redis\+cluster:\/\//);
  });
});
