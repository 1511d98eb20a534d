import { readFileSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ThrottleReason, WorkerService } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { devGatewayWithPsql } from "../testing/dev-gateway.js";

// `taskq dev`'s Postgres port: a real dev gateway on its own in-memory PGlite, psql's part played by
// `pg` (the same wire protocol), the gateway's part by a Connect client.

const dev = devGatewayWithPsql();
const connect = dev.connect;

const claimOnce = (queue: string) =>
  createClient(
    WorkerService,
    createConnectTransport({ baseUrl: dev.gateway().httpUrl, httpVersion: "1.1" }),
  ).claimOnce({ queues: [queue], maxJobs: 1 });

describe("the dev Postgres port", () => {
  it("runs the SQL verbs, and the gateway applies them at once", async () => {
    expect(dev.gateway().devPgUrl).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    const psql = await connect();
    try {
      await psql.query(`SELECT taskq.ensure_queue('mail', '{"max_running": 8}'::jsonb, 'operator:admin');`);
      await psql.query(`SELECT taskq.pause_queue('mail', 'ops-ada');`);
      const health = await psql.query(
        `SELECT queue, verdict FROM taskq.queue_health(NULL) WHERE queue = 'mail';`,
      );
      expect(health.rows).toEqual([{ queue: "mail", verdict: "paused" }]);
      const res = await claimOnce("mail");
      expect(res.throttled.map((v) => v.reason)).toEqual([ThrottleReason.PAUSED]);
      // Parameters go through the extended protocol (Parse, Bind, Execute, Sync).
      await psql.query("SELECT taskq.resume_queue($1, $2)", ["mail", "ops-ada"]);
      expect((await claimOnce("mail")).throttled).toEqual([]);
      const audit = await psql.query(
        `SELECT event_type, actor FROM taskq.list_queue_audit('mail', 50, NULL);`,
      );
      expect(audit.rows.map((r) => r.actor)).toEqual(["ops-ada", "ops-ada", "operator:admin"]);
    } finally {
      await psql.end();
    }
  });

  it("runs the SQL of docs/flow-control.md verbatim", async () => {
    const doc = readFileSync(new URL("../../../docs/flow-control.md", import.meta.url), "utf8");
    const blocks = [...doc.matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "");
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const psql = await connect();
    try {
      for (const block of blocks) await psql.query(block); // the whole block, as psql -f would send it
      const flow = await psql.query(
        "SELECT breaker_state, breaker_opened_total, max_running FROM taskq.queue_flow WHERE queue = 'mail'",
      );
      // Tripped and closed by hand, with the cap set: the docs' verbs took effect.
      expect(flow.rows).toEqual([{ breaker_state: "closed", breaker_opened_total: 1, max_running: 8 }]);
      const { rows } = await psql.query(
        "SELECT event_type FROM taskq.list_queue_audit('mail', 50, NULL) ORDER BY id",
      );
      expect(rows.map((r) => r.event_type)).toContain("queue.trip_breaker");
    } finally {
      await psql.end();
    }
  });

  it("keeps a client's transaction to itself, and rolls back one left open", async () => {
    const a = await connect();
    await a.query(`SELECT taskq.ensure_queue('txn', '{}'::jsonb, 'ops-ada')`);
    await a.query("BEGIN");
    await a.query(`SELECT taskq.pause_queue('txn', 'ops-ada')`);
    // The gateway waits for the transaction: its reads never see (or join) the uncommitted pause.
    const waiting = claimOnce("txn");
    await a.query("ROLLBACK");
    expect((await waiting).throttled).toEqual([]);

    await a.query("BEGIN");
    await a.query(`SELECT taskq.pause_queue('txn', 'ops-ada')`);
    await a.end(); // gone mid-transaction: rolled back, the store free again
    expect((await claimOnce("txn")).throttled).toEqual([]);
    const b = await connect();
    try {
      const { rows } = await b.query(
        `SELECT count(*)::int AS n FROM taskq.list_queue_audit('txn', 50, NULL) WHERE event_type <> 'queue.ensure'`,
      );
      expect(rows).toEqual([{ n: 0 }]);
    } finally {
      await b.end();
    }
  });
});
