import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { loadConfig } from "../config.js";
import { silentLogger } from "../log.js";
import { type Gateway, startGateway } from "../server.js";

/**
 * A `taskq dev` gateway on its own in-memory PGlite for the calling test file, started before its tests
 * and stopped after them, and `connect()`: a `pg` client on its Postgres port, as psql connects.
 */
export function devGatewayWithPsql(): { gateway: () => Gateway; connect: () => Promise<pg.Client> } {
  let gateway: Gateway | undefined;
  beforeAll(async () => {
    const config = loadConfig("dev", {
      TASKQ_DATA_DIR: "memory",
      TASKQ_GRPC_PORT: "0",
      TASKQ_HTTP_PORT: "0",
      TASKQ_DEV_PG_PORT: "0",
      TASKQ_LOG_LEVEL: "silent",
    });
    gateway = await startGateway(config, silentLogger());
  });
  afterAll(() => gateway?.stop());
  const started = () => {
    if (!gateway) throw new Error("the dev gateway has not started");
    return gateway;
  };
  return {
    gateway: started,
    async connect() {
      const client = new pg.Client({ connectionString: started().devPgUrl ?? "" });
      await client.connect();
      return client;
    },
  };
}
