import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisLimiter } from "../server/limiter.js";
import { freeRedisPort, startRedisServer } from "../testing/redis-cluster.js";
import { haveCommand } from "../testing/services.js";
import { makeTestPki, type TestPki } from "../testing/test-pki.js";
import { RedisLimiter } from "./redis-limiter.js";
import { redisClient } from "./redis-url.js";

const haveRedis = haveCommand("redis-server", "install redis-server (Debian) to run the Redis auth tests");

// Managed Redis wants a password or an ACL user, and TLS: the limiter's URL carries them.
describe.runIf(haveRedis)("a Redis that wants a password, an ACL user or TLS", () => {
  let pki: TestPki;
  let tlsPort: number;
  let redis: Awaited<ReturnType<typeof startRedisServer>>;
  const prefix = `t${randomBytes(4).toString("hex")}:`;
  beforeAll(async () => {
    pki = makeTestPki();
    tlsPort = await freeRedisPort();
    redis = await startRedisServer([
      "--requirepass",
      "s3cret",
      "--tls-port",
      String(tlsPort),
      "--tls-cert-file",
      pki.server.certFile,
      "--tls-key-file",
      pki.server.keyFile,
      "--tls-ca-cert-file",
      pki.caFile,
      "--tls-auth-clients",
      "no",
    ]);
    // A least-privilege user: the limiter's keys only, and the commands its scripts need.
    await redis.cli("ACL", "SETUSER", "taskq", "on", ">p4ss", `~${prefix}*`, "+@all", "-@dangerous");
  });
  afterAll(async () => {
    await redis?.stop();
    pki?.remove();
  });

  it("admits through the default user's password", async () => {
    const limiter = redisLimiter(`redis://:s3cret@127.0.0.1:${redis.port}`, prefix);
    try {
      expect((await limiter.rateTake("pw", 60, 1, 1)).admitted).toBe(1);
    } finally {
      await limiter.close();
    }
  });

  it("admits through an ACL user limited to the limiter's keys", async () => {
    const limiter = redisLimiter(`redis://taskq:p4ss@127.0.0.1:${redis.port}`, prefix);
    try {
      expect((await limiter.rateTake("acl", 60, 1, 1)).admitted).toBe(1);
      const t = await limiter.throttleTake("acl", 1000);
      expect(t.admitted).toBe(true);
    } finally {
      await limiter.close();
    }
  });

  it("fails without the password, and with a wrong one", async () => {
    for (const url of [`redis://127.0.0.1:${redis.port}`, `redis://taskq:wrong@127.0.0.1:${redis.port}`]) {
      const limiter = redisLimiter(url, prefix);
      try {
        await expect(limiter.rateTake("none", 60, 1, 1)).rejects.toThrow(/NOAUTH|WRONGPASS|timed out/);
      } finally {
        await limiter.close().catch(() => {});
      }
    }
  });

  it("speaks TLS to a rediss:// URL, trusting the CA it is given", async () => {
    const client = redisClient(`rediss://taskq:p4ss@127.0.0.1:${tlsPort}`, {
      maxRetriesPerRequest: 1,
      tls: { ca: pki.ca },
    });
    const limiter = new RedisLimiter(client, { prefix });
    try {
      expect((await limiter.rateTake("tls", 60, 1, 1)).admitted).toBe(1);
      const info = await client.call("CLIENT", "INFO");
      expect(String(info)).toContain("user=taskq");
    } finally {
      await limiter.close();
    }
    // The same URL without the CA: the certificate is checked, so the connection fails.
    const untrusted = redisClient(`rediss://taskq:p4ss@127.0.0.1:${tlsPort}`, {
      maxRetriesPerRequest: 1,
      commandTimeout: 1000,
      retryStrategy: () => null,
    });
    untrusted.on("error", () => {});
    await expect(untrusted.ping()).rejects.toThrow();
    untrusted.disconnect();
  });
});
