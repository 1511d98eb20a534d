import { once } from "node:events";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Config, loadConfig } from "../config.js";
import { ConfigError } from "../errors.js";
import { silentLogger } from "../log.js";
import { startGateway } from "../server.js";
import { freePort } from "../testing/free-port.js";
import { freshPostgres, haveService, testServices } from "../testing/services.js";

// A start that fails on a port in use closes everything it had opened (psql port, the other port, the
// embedded store and its folder's lock), so the process can exit, and the message names the setting.

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function busyPort(): Promise<number> {
  const server: Server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  cleanups.push(() => new Promise((r) => server.close(r)));
  return (server.address() as { port: number }).port;
}

/** Whether something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function devConfig(ports: Pick<Config, "grpcPort" | "httpPort" | "devPgPort">): Promise<Config> {
  const root = await mkdtemp(join(tmpdir(), "taskq-start-"));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  return { ...loadConfig("dev", {}), host: "127.0.0.1", dataDir: join(root, "data"), ...ports };
}

describe("a start that fails", () => {
  it("on the gRPC port: says which setting moves it, and closes the psql port and frees the store", async () => {
    const busy = await busyPort();
    const config = await devConfig({
      grpcPort: busy,
      httpPort: await freePort(),
      devPgPort: await freePort(),
    });
    const err = await startGateway(config, silentLogger()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toBe(
      `gRPC port 127.0.0.1:${busy} is in use (set TASKQ_GRPC_PORT or the config file's grpcPort to move it; 0 picks a free port)`,
    );
    expect(await listening(config.devPgPort ?? 0)).toBe(false);
    expect(await listening(config.httpPort)).toBe(false);
    await expect(stat(`${config.dataDir}.lock`)).rejects.toMatchObject({ code: "ENOENT" });
    // The same store and ports serve a gateway started right after.
    const gateway = await startGateway({ ...config, grpcPort: 0 }, silentLogger());
    expect(gateway.devPgUrl).toBe(`postgres://postgres@127.0.0.1:${config.devPgPort}/postgres`);
    await gateway.stop();
  });

  it("on the HTTP port: closes the gRPC port it had opened", async () => {
    const busy = await busyPort();
    const config = await devConfig({ grpcPort: await freePort(), httpPort: busy, devPgPort: null });
    await expect(startGateway(config, silentLogger())).rejects.toThrow(
      `HTTP port 127.0.0.1:${busy} is in use (set TASKQ_HTTP_PORT or the config file's httpPort to move it; 0 picks a free port)`,
    );
    expect(await listening(config.grpcPort)).toBe(false);
  });

  it('on the psql port: names devPgPort, and its "off"', async () => {
    const busy = await busyPort();
    const config = await devConfig({ grpcPort: 0, httpPort: 0, devPgPort: busy });
    await expect(startGateway(config, silentLogger())).rejects.toThrow(
      `psql port 127.0.0.1:${busy} is in use (set TASKQ_DEV_PG_PORT or the config file's devPgPort to move it; 0 picks a free port, "off" closes it)`,
    );
    await expect(stat(`${config.dataDir}.lock`)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it.runIf(haveService("postgres") && haveService("redis"))(
    "in production mode: closes its Postgres connections",
    async () => {
      const fresh = await freshPostgres();
      cleanups.push(fresh.drop);
      const busy = await busyPort();
      const config: Config = {
        ...loadConfig("gateway", {
          TASKQ_DATABASE_URL: fresh.url,
          TASKQ_REDIS_URL: testServices.redisUrl,
          TASKQ_TOKENS: JSON.stringify([{ name: "t", role: "operator", sha256: "0".repeat(64) }]),
        }),
        host: "127.0.0.1",
        grpcPort: busy,
        httpPort: 0,
      };
      await expect(startGateway(config, silentLogger())).rejects.toThrow(
        `gRPC port 127.0.0.1:${busy} is in use`,
      );
      const dbName = new URL(fresh.url).pathname.slice(1);
      const { Client } = (await import("pg")).default;
      const admin = new Client({ connectionString: testServices.postgresUrl });
      await admin.connect();
      const sessions = async () =>
        (await admin.query("select count(*)::int as n from pg_stat_activity where datname = $1", [dbName]))
          .rows[0].n as number;
      try {
        // A backend may take a moment to go after its client hung up; an idle pooled one stays 10 s.
        const deadline = Date.now() + 2000;
        while ((await sessions()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        expect(await sessions()).toBe(0);
      } finally {
        await admin.end();
      }
    },
  );
});
