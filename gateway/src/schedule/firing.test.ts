import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// Real time, through the gateway's own maintenance timer (embedded store): slots fire on time, never
// before their slot, and a paused schedule stops firing.
describe("a schedule fired by a running dev gateway", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ config: { maintenanceIntervalMs: 100 } });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it("fires each second's slot once, not before its slot (and soon after it)", async () => {
    const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl }));
    await admin.createSchedule({ schedule: { name: "every-second", cron: "* * * * * *", queue: "secs" } });
    await new Promise((r) => setTimeout(r, 3500));
    await admin.pauseSchedule({ name: "every-second" });
    const rows = await gw.store.db.query<{
      slot: string;
      enqueued_ms: number;
      run_ms: number;
      state: string;
    }>({
      name: "",
      text: `select headers->>'taskq-schedule-slot' as slot, state,
               (extract(epoch from enqueued_at) * 1000)::float8 as enqueued_ms,
               (extract(epoch from run_at) * 1000)::float8 as run_ms
             from taskq.jobs where queue = 'secs' order by run_at`,
    });
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows.length).toBeLessThanOrEqual(5);
    for (const [i, r] of rows.entries()) {
      expect(Date.parse(r.slot)).toBe(Math.round(r.run_ms));
      expect(r.enqueued_ms).toBeGreaterThanOrEqual(r.run_ms);
      expect(r.enqueued_ms - r.run_ms).toBeLessThan(2500);
      expect(r.state).toBe("queued");
      if (i > 0) expect(r.run_ms - (rows[i - 1]?.run_ms ?? 0)).toBe(1000);
    }
    const count = rows.length;
    await new Promise((r) => setTimeout(r, 1500));
    const [after] = await gw.store.db.query<{ n: number }>({
      name: "",
      text: "select count(*)::int as n from taskq.jobs where queue = 'secs'",
    });
    expect(after?.n).toBe(count);
  });
});
