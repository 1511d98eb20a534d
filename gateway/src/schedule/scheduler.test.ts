import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidArgumentError, NotFoundError } from "../errors.js";
import { silentLogger } from "../log.js";
import { type Db, pgliteDb, postgresDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import { QueueStore } from "../store/queue-store.js";
import { ScheduleStore } from "../store/schedule-store.js";
import { freshPostgres, haveService } from "../testing/services.js";
import { CronSchedule } from "./cron.js";
import { nextFiring } from "./plan.js";
import { Scheduler } from "./scheduler.js";

/** A database that can be closed and opened again on the same data: a gateway restart. */
const engines = [
  {
    name: "pglite",
    available: () => true,
    create: async () => {
      const dir = await mkdtemp(join(tmpdir(), "taskq-sched-"));
      return { open: () => pgliteDb(dir), drop: () => rm(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: "postgres",
    available: () => haveService("postgres"),
    create: async () => {
      const fresh = await freshPostgres();
      return { open: async () => postgresDb({ url: fresh.url, poolSize: 4 }), drop: fresh.drop };
    },
  },
];

const NAMES = Array.from({ length: 200 }, (_, i) => `report-${i}`);

for (const engine of engines) {
  describe.skipIf(!engine.available())(`schedules on ${engine.name}`, () => {
    let data: { open: () => Promise<Db>; drop: () => Promise<void> };
    let db: Db;
    let schedules: ScheduleStore;
    const scheduler = () => new Scheduler(schedules, { defaultMaxAttempts: 7 }, silentLogger());
    const restart = async () => {
      await db.close();
      db = await data.open();
      await migrate(db);
      schedules = new ScheduleStore(db);
    };

    beforeAll(async () => {
      data = await engine.create();
      db = await data.open();
      await migrate(db);
      schedules = new ScheduleStore(db);
    });
    afterAll(async () => {
      await db.close();
      await data.drop();
    });

    /** Each active schedule's next firing after `t`, by name, as the leader plans it. */
    const planned = async (t: Date, prefix: string) => {
      const out = new Map<string, { slot: number; runAt: number }>();
      for (const s of await schedules.schedulesActive()) {
        if (!s.name.startsWith(prefix)) continue;
        const f = nextFiring(
          { cron: new CronSchedule(s.cron, s.time_zone), smearOffsetMs: s.smear_offset_ms },
          t,
        );
        if (f) out.set(s.name, { slot: f.slot.getTime(), runAt: f.runAt.getTime() });
      }
      return out;
    };

    it("200 schedules at 0 * * * * with smear 300 spread over the window, the same after a restart; without smear all fire at :00", async () => {
      const from = await schedules.dbNow();
      for (const name of NAMES) {
        await schedules.scheduleCreate(
          name,
          { cron: "0 * * * *", queue: "smeared" },
          new Uint8Array(0),
          "test",
        );
        await schedules.scheduleSetSmear(name, 300, "test");
        await schedules.scheduleCreate(
          `plain-${name}`,
          { cron: "0 * * * *", queue: "plain" },
          new Uint8Array(0),
          "test",
        );
      }
      // Pinned: every schedule starts at the same instant, even if an hour turns while creating them.
      await db.query({ name: "", text: "update taskq.schedules set last_slot = $1" }, [from]);
      const slot = new CronSchedule("0 * * * *", "UTC").next(from)?.getTime() ?? 0;
      const before = await planned(from, "report-");
      expect(before.size).toBe(200);
      const offsets = [...before.values()].map((f) => f.runAt - f.slot);
      expect([...before.values()].every((f) => f.slot === slot)).toBe(true);
      expect(Math.min(...offsets)).toBeGreaterThanOrEqual(0);
      expect(Math.max(...offsets)).toBeLessThan(300_000);
      // Spread: no second has more than a handful; every minute of the window gets some.
      const perSecond = new Map<number, number>();
      for (const o of offsets)
        perSecond.set(Math.floor(o / 1000), (perSecond.get(Math.floor(o / 1000)) ?? 0) + 1);
      expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(5);
      const perMinute = new Set(offsets.map((o) => Math.floor(o / 60_000)));
      expect(perMinute.size).toBe(5);
      const plain = await planned(from, "plain-");
      expect([...plain.values()].every((f) => f.runAt === slot)).toBe(true);

      // The real firing path, on a pinned clock just after the slot.
      const at = new Date(slot + 1000);
      expect((await scheduler().runOnce(at)).fired).toBe(400);
      const fired = await db.query<{
        queue: string;
        name: string;
        offset_ms: number;
        state: string;
        max_attempts: number;
      }>(
        {
          name: "",
          text: `select queue, headers->>'taskq-schedule' as name, state, max_attempts,
                 (extract(epoch from run_at) * 1000 - $1::float8)::float8 as offset_ms
               from taskq.jobs where headers->>'taskq-schedule-slot' = $2`,
        },
        [slot, new Date(slot).toISOString().replace(".000Z", "Z")],
      );
      expect(fired).toHaveLength(400);
      for (const j of fired.filter((j) => j.queue === "smeared")) {
        const p = before.get(j.name);
        expect(Math.round(j.offset_ms)).toBe((p?.runAt ?? 0) - slot);
      }
      expect(fired.filter((j) => j.queue === "plain").every((j) => Math.round(j.offset_ms) === 0)).toBe(true);
      expect(fired.every((j) => j.max_attempts === 7)).toBe(true);

      // Restart: the same offsets, and the slot does not fire again.
      await restart();
      expect(await planned(from, "report-")).toEqual(before);
      expect((await scheduler().runOnce(at)).fired).toBe(0);
      expect((await scheduler().runOnce(new Date(slot + 30_000))).fired).toBe(0);
    });

    it("two schedulers firing at once fire each slot once", async () => {
      await schedules.scheduleCreate(
        "race",
        { cron: "* * * * * *", queue: "race" },
        new Uint8Array(0),
        "test",
      );
      const t0 = (await schedules.dbNow()).getTime();
      const a = scheduler();
      const b = scheduler();
      for (let s = 1; s <= 5; s++) {
        const at = new Date(t0 + s * 1000);
        await Promise.all([a.runOnce(at), b.runOnce(at), a.runOnce(at)]);
      }
      const rows = await db.query<{ slot: string; n: number }>({
        name: "",
        text: `select headers->>'taskq-schedule-slot' as slot, count(*)::int as n from taskq.jobs
               where queue = 'race' group by 1 order by 1`,
      });
      expect(rows.length).toBeGreaterThanOrEqual(5);
      expect(rows.every((r) => r.n === 1)).toBe(true);
    });

    it("missed slots: skip passes over them, fire_once fires the latest once (real firing path)", async () => {
      const created = await schedules.dbNow();
      for (const policy of ["skip", "fire_once"] as const) {
        await schedules.scheduleCreate(
          `missed-${policy}`,
          { cron: "0 * * * *", queue: `missed-${policy}`, missed_policy: policy },
          new Uint8Array(0),
          "test",
        );
      }
      // No gateway ran for hours; the leader looks at half past, so no slot is merely late.
      const later = new Date(
        Math.floor(created.getTime() / 3_600_000) * 3_600_000 + 5 * 3_600_000 + 30 * 60_000,
      );
      const latest = new CronSchedule("0 * * * *", "UTC").latestAtOrBefore(later)?.toISOString() ?? "";
      // (The other tests' schedules fire or skip too; only these two queues are looked at.)
      await scheduler().runOnce(later);
      const fired = () =>
        db.query<{ queue: string; slot: string }>({
          name: "",
          text: `select queue, headers->>'taskq-schedule-slot' as slot from taskq.jobs where queue like 'missed-%'`,
        });
      const once = [{ queue: "missed-fire_once", slot: latest.replace(".000Z", "Z") }];
      expect(await fired()).toEqual(once);
      const lastSlots = (await schedules.schedulesActive())
        .filter((s) => s.name.startsWith("missed-"))
        .map((s) => s.last_slot.toISOString());
      expect(lastSlots).toEqual([latest, latest]);
      await scheduler().runOnce(later);
      expect(await fired()).toEqual(once);
    });

    it("operator roles on psql: operators run the verbs, observers only list, nobody but the gateway fires", async () => {
      const as = (role: string, text: string) =>
        db.transaction(async (tx) => {
          await tx.query({ name: "", text: `set local role ${role}` });
          return tx.query<Record<string, unknown>>({ name: "", text });
        });
      const refused = async (p: Promise<unknown>) => {
        try {
          await p;
        } catch (err) {
          return (err as { code?: string }).code;
        }
        return "allowed";
      };
      await as(
        "taskq_operator",
        `select taskq.create_schedule('roles', '{"cron": "0 * * * *", "queue": "r"}', null, 'carol')`,
      );
      await as("taskq_operator", "select taskq.set_schedule_smear('roles', 300, 'carol')");
      await as("taskq_operator", "select taskq.redrive_failed('r', 10, 'carol', 60)");
      expect(
        await as("taskq_observer", "select name from taskq.list_schedules() where name = 'roles'"),
      ).toEqual([{ name: "roles" }]);
      for (const [role, text] of [
        ["taskq_observer", "select taskq.set_schedule_smear('roles', 0, 'eve')"],
        ["taskq_observer", "select taskq.redrive_failed('r', 10, 'eve', 0)"],
        ["taskq_observer", "select * from taskq.schedules"],
        ["taskq_housekeeper", "select * from taskq.list_schedules()"],
        ["taskq_operator", "select taskq.fire_schedule(1, now(), now(), 1, null)"],
      ] as const) {
        expect(await refused(as(role, text)), `${role}: ${text}`).toBe("42501");
      }
      const [smear] = await db.query<{ smear_seconds: number }>({
        name: "",
        text: "select smear_seconds from taskq.schedules where name = 'roles'",
      });
      expect(smear?.smear_seconds).toBe(300);
    });

    it("verbs validate, audit once, and a paused schedule does not fire", async () => {
      const verbs = new QueueStore(db);
      const created = await schedules.scheduleCreate(
        "nightly-report",
        {
          cron: "0 3 * * *",
          time_zone: "Europe/Berlin",
          queue: "reports",
          headers: { a: "b" },
          missed_policy: "fire_once",
        },
        new TextEncoder().encode("{}"),
        "operator:test",
      );
      expect(created).toMatchObject({
        name: "nightly-report",
        time_zone: "Europe/Berlin",
        payload_bytes: 2,
        smear_seconds: 0,
      });
      await expect(
        schedules.scheduleCreate(
          "nightly-report",
          { cron: "0 3 * * *", queue: "reports" },
          new Uint8Array(0),
          "x",
        ),
      ).rejects.toThrow(/already exists/);
      const smeared = await schedules.scheduleSetSmear("nightly-report", 300, "operator:test");
      expect(smeared.smear_offset_ms).toBeGreaterThanOrEqual(0);
      expect(smeared.smear_offset_ms).toBeLessThan(300_000);
      const bad = [
        () => schedules.scheduleSetSmear("nightly-report", 86_401, "x"),
        () => schedules.scheduleUpdate("nightly-report", { time_zone: "Mars/Base" }, null, "x"),
        () => schedules.scheduleUpdate("nightly-report", { cron: "* *" }, null, "x"),
        () => schedules.scheduleUpdate("nightly-report", { missed_policy: "sometimes" as "skip" }, null, "x"),
      ];
      for (const f of bad) await expect(f()).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(schedules.schedulePause("nope", "x")).rejects.toBeInstanceOf(NotFoundError);
      await schedules.schedulePause("nightly-report", "operator:test");
      expect((await schedules.schedulesActive()).some((s) => s.name === "nightly-report")).toBe(false);
      await schedules.scheduleResume("nightly-report", "operator:test");
      await schedules.scheduleDelete("nightly-report", "operator:test");
      expect(await schedules.schedulesList("nightly-report")).toEqual([]);
      const audit = await verbs.auditList("schedule:nightly-report", 50, null);
      expect(audit.map((a) => a.event_type)).toEqual([
        "schedule.delete",
        "schedule.resume",
        "schedule.pause",
        "schedule.set_smear",
        "schedule.create",
      ]);
      expect(audit.every((a) => a.actor === "operator:test")).toBe(true);
    });
  });
}
