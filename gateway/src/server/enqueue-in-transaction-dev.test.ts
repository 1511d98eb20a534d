import { readFileSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { WorkerService } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { devGatewayWithPsql } from "../testing/dev-gateway.js";

// `taskq dev`'s embedded store through its Postgres port: an application's transaction enqueues with
// taskq.enqueue, and a poll parked on the dev gateway wakes at its commit; a rollback leaves nothing.
const dev = devGatewayWithPsql();
const connect = dev.connect;

const claimOnce = (queue: string, waitS: number) =>
  createClient(
    WorkerService,
    createConnectTransport({ baseUrl: dev.gateway().httpUrl, httpVersion: "1.1" }),
  ).claimOnce({
    queues: [queue],
    maxJobs: 5,
    maxWait: { seconds: BigInt(waitS), nanos: 0 },
  });

describe("enqueue in a transaction on the embedded dev store", () => {
  it("a parked poll gets the job at the commit; a rolled-back one leaves no job", async () => {
    const psql = await connect();
    try {
      const parked = claimOnce("dev-receipts", 20);
      await psql.query("BEGIN");
      await psql.query("CREATE TABLE shop_orders (id serial PRIMARY KEY, item text)");
      await psql.query("INSERT INTO shop_orders (item) VALUES ('book')");
      const { rows } = await psql.query(
        `SELECT taskq.enqueue('dev-receipts', '{"order": 1}'::jsonb)::text AS id`,
      );
      await psql.query("COMMIT");
      const got = await parked;
      expect(got.jobs.map((j) => j.id)).toEqual([rows[0]?.id]);
      expect(JSON.parse(new TextDecoder().decode(got.jobs[0]?.payload))).toEqual({ order: 1 });

      const waiting = claimOnce("dev-never", 1);
      await psql.query("BEGIN");
      await psql.query(`SELECT taskq.enqueue('dev-never', '{"order": 2}'::jsonb)`);
      await psql.query("ROLLBACK");
      expect((await waiting).jobs).toEqual([]);
      expect((await psql.query("SELECT id FROM taskq.jobs WHERE queue = 'dev-never'")).rows).toEqual([]);
    } finally {
      await psql.end();
    }
  });

  it("runs the SQL of docs/enqueue-in-transaction.md verbatim", async () => {
    const doc = readFileSync(new URL("../../../docs/enqueue-in-transaction.md", import.meta.url), "utf8");
    const blocks = [...doc.matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "");
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const psql = await connect();
    try {
      for (const block of blocks) await psql.query(block); // the whole block, as psql -f would send it
      const { rows } = await psql.query(
        "SELECT queue, content_type FROM taskq.jobs WHERE queue IN ('emails', 'thumbnails') ORDER BY id",
      );
      expect(rows.length).toBeGreaterThanOrEqual(3);
      expect(new Set(rows.map((r) => r.queue))).toEqual(new Set(["emails", "thumbnails"]));
    } finally {
      await psql.end();
    }
  });
});
