import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgres, haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Gateways on Postgres share the test Redis for their limiters.
const services = haveService("postgres") && haveService("redis");

describe.skipIf(!services)("a schedule across gateway instances and restarts", () => {
  let db: Awaited<ReturnType<typeof freshPostgres>>;
  const running = new Set<TestGateway>();
  const start = async () => {
    const gw = await startTestGateway({ databaseUrl: db.url, config: { maintenanceIntervalMs: 100 } });
    running.add(gw);
    return gw;
  };
  const stop = async (gw: TestGateway) => {
    running.delete(gw);
    await gw.stop();
  };
  beforeAll(async () => {
    db = await freshPostgres();
  });
  afterAll(async () => {
    for (const gw of running) await gw.stop();
    await db?.drop();
  });

  it("fires every slot of an every-second schedule exactly once: two instances, one restarted midway", async () => {
    const a = await start();
    const b = await start();
    const admin = createClient(AdminService, createTransport({ baseUrl: b.grpcUrl }));
    await admin.createSchedule({ schedule: { name: "tick", cron: "* * * * * *", queue: "ticks" } });
    await sleep(3000);
    await stop(a); // the leader or not: either way the other instance goes on
    const c = await start(); // a restarted instance on the same database
    await sleep(3000);
    await stop(b);
    await sleep(2000);
    // Stop the schedule (through c: b is gone) so the count below is final.
    await createClient(AdminService, createTransport({ baseUrl: c.grpcUrl })).pauseSchedule({ name: "tick" });
    await sleep(300);

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query<{ slot: string; n: number; late_ms: number }>(
      `select headers->>'taskq-schedule-slot' as slot, count(*)::int as n,
              max(extract(epoch from enqueued_at - run_at) * 1000)::float8 as late_ms
       from taskq.jobs where queue = 'ticks' group by 1 order by 1`,
    );
    await client.end();
    // ~8 s of slots: each fired once, and none missing between the first and the last.
    expect(rows.length).toBeGreaterThanOrEqual(6);
    expect(rows.filter((r) => r.n !== 1)).toEqual([]);
    const times = rows.map((r) => Date.parse(r.slot));
    const first = times[0] ?? 0;
    expect(times).toEqual(times.map((_, i) => first + i * 1000));
    // Fired on time but for the hand-overs (a stopping leader releases its lease at once).
    expect(Math.max(...rows.map((r) => r.late_ms))).toBeLessThan(5000);
  });
});
