import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

/** The schedule and redrive RPCs over gRPC: validation names the field and writes nothing. */
describe("AdminService schedules and redrive", () => {
  let gateway: TestGateway;
  const admin = () => createClient(AdminService, createTransport({ baseUrl: gateway.grpcUrl }));
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => null,
      (e: unknown) => ({ code: ConnectError.from(e).code, message: ConnectError.from(e).rawMessage }),
    );
  const spec = (over: object = {}) => ({ name: "hourly", cron: "0 * * * *", queue: "reports", ...over });

  beforeAll(async () => {
    gateway = await startTestGateway({ config: { maxPayloadBytes: 1024 } });
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  it("bad input is INVALID_ARGUMENT naming the field, and writes nothing", async () => {
    const a = admin();
    const cases: [object, RegExp][] = [
      [{ schedule: { name: "x", queue: "q" } }, /^schedule\.cron is required/],
      [{ schedule: { name: "x", cron: "* * * * *" } }, /^schedule\.queue is required/],
      [{ schedule: spec({ cron: "* * *" }) }, /^schedule\.cron must have 5 fields/],
      [{ schedule: spec({ cron: "0 0 * * * * *" }) }, /^schedule\.cron must have 5 fields/],
      [{ schedule: spec({ cron: "0 25 * * *" }) }, /^schedule\.cron is not a valid cron expression/],
      [{ schedule: spec({ timeZone: "Mars/Base" }) }, /^schedule\.time_zone must be UTC or an IANA/],
      [{ schedule: spec({ name: "bad name" }) }, /^name must be 1 to 128/],
      [{ schedule: spec({ queue: "-q" }) }, /^schedule\.queue must be/],
      [
        { schedule: spec({ payload: new Uint8Array(1025) }) },
        /^schedule\.payload must be at most 1024 bytes/,
      ],
      [{ schedule: spec({ priority: 40_000 }) }, /^schedule\.priority must be from -32768 to 32767/],
      [{ schedule: spec({ maxAttempts: 1001 }) }, /^schedule\.max_attempts must be from 1 to 1000/],
      [{ schedule: spec({ missedPolicy: "always" }) }, /^schedule\.missed_policy must be skip or fire_once/],
      [{ schedule: spec({ smearSeconds: 86_401 }) }, /^schedule\.smear_seconds must be from 0 to 86400/],
      [{}, /^schedule is required/],
    ];
    for (const [req, message] of cases) {
      const f = await failure(a.createSchedule(req));
      expect(
        f,
        JSON.stringify(req, (_k, v) => (v instanceof Uint8Array ? v.length : v)),
      ).toMatchObject({
        code: Code.InvalidArgument,
      });
      expect(f?.message).toMatch(message);
    }
    expect(await failure(a.redriveFailed({ queue: "q", limit: 0 }))).toMatchObject({
      code: Code.InvalidArgument,
      message: expect.stringMatching(/^limit must be from 1 to 100000/),
    });
    expect(await failure(a.redriveFailed({ queue: "q", limit: 5, smearSeconds: 86_401 }))).toMatchObject({
      code: Code.InvalidArgument,
      message: expect.stringMatching(/^smear_seconds must be from 0 to 86400/),
    });
    expect(await failure(a.redriveFailed({ queue: "", limit: 5 }))).toMatchObject({
      code: Code.InvalidArgument,
    });
    expect((await a.listSchedules({})).schedules).toEqual([]);
    expect((await a.listQueueAudit({ queue: "q" })).entries).toEqual([]);
    expect((await a.listQueueAudit({ queue: "schedule:x" })).entries).toEqual([]);
  });

  it("create, get with payload, update, smear; ALREADY_EXISTS and NOT_FOUND", async () => {
    const a = admin();
    const created = (
      await a.createSchedule({
        schedule: spec({
          payload: new TextEncoder().encode("hi"),
          headers: { entries: { team: "billing" } },
        }),
      })
    ).schedule;
    expect(created).toMatchObject({
      name: "hourly",
      timeZone: "UTC",
      missedPolicy: "skip",
      smearSeconds: 0,
      smearOffsetMs: 0,
      payloadBytes: 2,
      headers: { team: "billing" },
      paused: false,
    });
    // The next slot is the next full hour, and its job is due then (no smear).
    const next = Number(created?.nextSlot?.seconds ?? 0n) * 1000;
    expect(next % 3_600_000).toBe(0);
    expect(next).toBeGreaterThan(Date.now() - 1000);
    expect(created?.nextRunAt).toEqual(created?.nextSlot);

    expect(await failure(a.createSchedule({ schedule: spec() }))).toMatchObject({ code: Code.AlreadyExists });
    expect(await failure(a.getSchedule({ name: "nope" }))).toMatchObject({ code: Code.NotFound });
    expect(await failure(a.setScheduleSmear({ name: "nope", smearSeconds: 5 }))).toMatchObject({
      code: Code.NotFound,
    });

    const got = await a.getSchedule({ name: "hourly" });
    expect(new TextDecoder().decode(got.payload)).toBe("hi");

    const smeared = (await a.setScheduleSmear({ name: "hourly", smearSeconds: 300 })).schedule;
    expect(smeared?.smearOffsetMs).toBeGreaterThanOrEqual(0);
    expect(smeared?.smearOffsetMs).toBeLessThan(300_000);
    const runAt = Number(smeared?.nextRunAt?.seconds ?? 0n) * 1000 + (smeared?.nextRunAt?.nanos ?? 0) / 1e6;
    expect(runAt - Number(smeared?.nextSlot?.seconds ?? 0n) * 1000).toBe(smeared?.smearOffsetMs);

    // An update changes only what it sets; a payload left unset is kept.
    const updated = (
      await a.updateSchedule({ schedule: { name: "hourly", cron: "*/5 * * * *", timeZone: "Asia/Tokyo" } })
    ).schedule;
    expect(updated).toMatchObject({
      cron: "*/5 * * * *",
      timeZone: "Asia/Tokyo",
      queue: "reports",
      smearSeconds: 300,
    });
    expect(new TextDecoder().decode((await a.getSchedule({ name: "hourly" })).payload)).toBe("hi");
    expect(await failure(a.updateSchedule({ schedule: { name: "hourly", cron: "bad" } }))).toMatchObject({
      code: Code.InvalidArgument,
    });

    const audit = (await a.listQueueAudit({ queue: "schedule:hourly" })).entries.map((e) => e.eventType);
    expect(audit).toEqual(["schedule.update", "schedule.set_smear", "schedule.create"]);
    const paused = (await a.pauseSchedule({ name: "hourly" })).schedule;
    expect(paused?.paused).toBe(true);
    expect(paused?.nextSlot).toBeUndefined();
    expect((await a.resumeSchedule({ name: "hourly" })).schedule?.paused).toBe(false);
    expect((await a.deleteSchedule({ name: "hourly" })).schedule?.name).toBe("hourly");
    expect(await failure(a.deleteSchedule({ name: "hourly" }))).toMatchObject({ code: Code.NotFound });
  });
});
