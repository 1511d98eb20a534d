import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engines, knownQueues } from "../testing/services.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";

/** Migration 0005 as an operator uses it from psql: the audit log's reads, prune, counters and roles. */
for (const engine of engines) {
  describe.skipIf(!engine.available())(
    `operator reads on ${engine.name} (list_queue_audit, prune_queue_audit, queue_counters, roles)`,
    () => {
      let db: Db;
      let close: () => Promise<void>;
      const sql = (text: string, params: unknown[] = []) =>
        db.query<Record<string, unknown>>({ name: "", text }, params);
      const audit = (queue: string, limit: number | null = null, beforeId: number | string | null = null) =>
        sql("select id, event_type, actor, detail, created_at from taskq.list_queue_audit($1, $2, $3)", [
          queue,
          limit,
          beforeId,
        ]);
      // As jobs_enqueue does, a job makes its queue known (taskq.known_queues).
      const job = async (
        queue: string,
        state: string,
        extra: { runAgo?: string; finishedAgo?: string } = {},
      ) => {
        await sql("select taskq.note_queues($1)", [[queue]]);
        await sql(
          `insert into taskq.jobs (queue, state, payload, max_attempts, run_at, enqueued_at, finished_at)
       values ($1, $2, '\\x', 5, now() - $3::interval, now(), now() - $4::interval)`,
          [queue, state, extra.runAgo ?? "0 seconds", extra.finishedAgo ?? null],
        );
      };
      const error = (p: Promise<unknown>) =>
        p.then(
          () => null,
          (e: { code?: string; message?: string }) => ({ code: e.code, message: e.message }),
        );

      beforeAll(async () => {
        ({ db, close } = await engine.open());
        await knownQueues(db, "stamped", "mail", "other", "cnt");
      });
      afterAll(() => close());

      it("QueueStore.auditList gives whole milliseconds (a wire Timestamp's nanos must be an int32)", async () => {
        await sql("select taskq.pause_queue('stamped', 'alice')");
        const [entry] = await new QueueStore(db).auditList("stamped", null, null);
        expect(Number.isInteger(entry?.created_ms)).toBe(true);
      });

      it("lists newest first, 50 by default, and pages with before_id", async () => {
        for (let i = 0; i < 60; i++) {
          await sql("select taskq.set_priority_aging('mail', $1, 'alice')", [i + 1]);
        }
        await sql("select taskq.pause_queue('other', 'bob')");

        const page1 = await audit("mail");
        expect(page1).toHaveLength(50);
        const ids = page1.map((r) => Number(r.id));
        expect(ids).toEqual([...ids].sort((a, b) => b - a));
        expect(page1[0]).toMatchObject({
          event_type: "queue.set_aging",
          actor: "alice",
          detail: { after: { priority_aging_seconds: 60 } },
        });
        expect(page1[0]?.created_at).toBeTruthy();

        const page2 = await audit("mail", null, ids[49] ?? 0);
        expect(page2).toHaveLength(10);
        expect(Math.max(...page2.map((r) => Number(r.id)))).toBeLessThan(ids[49] ?? 0);
        expect(page2.at(-1)?.detail).toMatchObject({ after: { priority_aging_seconds: 1 } });

        expect(await audit("mail", 3)).toHaveLength(3);
        expect(await audit("other")).toEqual([
          expect.objectContaining({ event_type: "queue.pause", actor: "bob" }),
        ]);
        expect(await audit("nothing")).toEqual([]);
      });

      it("refuses a limit out of range naming the field", async () => {
        for (const limit of [0, 1001]) {
          expect(await error(audit("mail", limit))).toMatchObject({
            code: "22023",
            message: expect.stringMatching(/^limit must be from 1 to 1000/),
          });
        }
      });

      it("prunes rows older than the given hours and returns the count", async () => {
        await sql(
          "update taskq.queue_audit set created_at = now() - interval '100 days' where queue = 'mail' and id in (select id from taskq.queue_audit where queue = 'mail' order by id limit 7)",
        );
        const [row] = await sql("select taskq.prune_queue_audit(2160) as removed");
        expect(Number(row?.removed)).toBe(7);
        expect(await audit("mail", 1000)).toHaveLength(53);
        const [again] = await sql("select taskq.prune_queue_audit(2160) as removed");
        expect(Number(again?.removed)).toBe(0);
        for (const hours of [0, null]) {
          expect(await error(sql("select taskq.prune_queue_audit($1)", [hours]))).toMatchObject({
            code: "22023",
            message: expect.stringMatching(/^older_than_hours /),
          });
        }
      });

      it("queue_counters: levels, oldest ready age, and throughput from finished_at", async () => {
        await job("cnt", "queued", { runAgo: "90 seconds" });
        await job("cnt", "queued");
        await job("cnt", "scheduled");
        await job("cnt", "running");
        await job("cnt", "succeeded", { finishedAgo: "10 seconds" });
        await job("cnt", "succeeded", { finishedAgo: "10 minutes" });
        await job("cnt", "succeeded", { finishedAgo: "2 hours" });
        await job("cnt", "failed", { finishedAgo: "30 seconds" });
        await job("cnt", "failed", { finishedAgo: "30 minutes" });
        await job("cnt", "cancelled", { finishedAgo: "30 seconds" });
        await job("done", "succeeded", { finishedAgo: "5 minutes" });
        await job("gone", "succeeded", { finishedAgo: "3 hours" });

        const rows = await sql("select * from taskq.queue_counters where queue = 'cnt'");
        expect(rows).toHaveLength(1);
        const r = Object.fromEntries(
          Object.entries(rows[0] ?? {}).map(([k, v]) => [k, k === "queue" ? v : Number(v)]),
        );
        expect(r).toMatchObject({
          queue: "cnt",
          queued: 2,
          scheduled: 1,
          running: 1,
          succeeded_last_minute: 1,
          failed_last_minute: 1,
          succeeded_last_hour: 2,
          failed_last_hour: 2,
        });
        expect(r.oldest_ready_seconds).toBeGreaterThanOrEqual(90);
        expect(r.oldest_ready_seconds).toBeLessThan(120);

        const names = (await sql("select queue from taskq.queue_counters order by queue")).map(
          (x) => x.queue,
        );
        // Every known queue, also one whose jobs all finished long ago.
        expect(names).toContain("done");
        expect(names).toContain("mail");
        expect(names).toContain("gone");
      });

      it("creates the roles; observer reads but can't run a verb or prune; housekeeper prunes; operator does all", async () => {
        const roles = await sql(
          "select rolname from pg_roles where rolname in ('taskq_operator', 'taskq_observer', 'taskq_housekeeper') order by rolname",
        );
        expect(roles.map((r) => r.rolname)).toEqual([
          "taskq_housekeeper",
          "taskq_observer",
          "taskq_operator",
        ]);

        // SET LOCAL ROLE in a transaction of its own: on a pool, the next statement may use another
        // connection, and a refused statement aborts its transaction.
        const as = (role: string, text: string, params: unknown[] = []) =>
          db.transaction(async (tx) => {
            await tx.query({ name: "", text: `set local role ${role}` });
            return tx.query<Record<string, unknown>>({ name: "", text }, params);
          });
        const denied = { code: "42501" };

        expect(
          await as("taskq_observer", "select * from taskq.list_queue_audit('other', null, null)"),
        ).toHaveLength(1);
        expect(await as("taskq_observer", "select * from taskq.queue_health('cnt')")).toHaveLength(1);
        expect(
          await as("taskq_observer", "select breaker_state from taskq.queue_flow where queue = 'other'"),
        ).toHaveLength(1);
        expect(
          await as("taskq_observer", "select * from taskq.queue_counters where queue = 'cnt'"),
        ).toHaveLength(1);
        for (const refused of [
          "select taskq.pause_queue('cnt', 'eve')",
          "select taskq.set_queue_throttle('cnt', 1, 60000, 'eve')",
          "select taskq.prune_queue_audit(1)",
          "select * from taskq.queue_audit",
          "delete from taskq.queue_audit",
          "select payload from taskq.jobs",
        ]) {
          expect(await error(as("taskq_observer", refused)), refused).toMatchObject(denied);
        }

        expect(await as("taskq_housekeeper", "select taskq.prune_queue_audit(1) as removed")).toHaveLength(1);
        for (const refused of [
          "select * from taskq.list_queue_audit('other', null, null)",
          "select * from taskq.queue_health(null)",
          "select taskq.pause_queue('cnt', 'eve')",
          "delete from taskq.queue_audit",
        ]) {
          expect(await error(as("taskq_housekeeper", refused)), refused).toMatchObject(denied);
        }

        await as("taskq_operator", "select taskq.pause_queue('cnt', 'carol')");
        expect(await as("taskq_operator", "select taskq.prune_queue_audit(2160) as removed")).toHaveLength(1);
        expect(await as("taskq_operator", "select * from taskq.list_queue_audit('cnt', 1, null)")).toEqual([
          expect.objectContaining({ event_type: "queue.pause", actor: "carol" }),
        ]);
        expect(await as("taskq_operator", "select verdict from taskq.queue_health('cnt')")).toEqual([
          { verdict: "paused" },
        ]);
        expect(
          await as("taskq_operator", "select * from taskq.queue_counters where queue = 'cnt'"),
        ).toHaveLength(1);
        // The failed verb wrote nothing: carol's pause is the queue's only audit row.
        expect(await audit("cnt")).toHaveLength(1);
      });

      it("the role block is idempotent (roles are cluster-wide: a second database re-runs it)", async () => {
        const file = await readFile(new URL("./migrations/0001_baseline.sql", import.meta.url), "utf8");
        const text = file.slice(file.indexOf("do $$"));
        await db.exec(text);
        await db.exec(text);
        const [n] = await sql(
          "select count(*)::int as n from pg_roles where rolname in ('taskq_operator', 'taskq_observer', 'taskq_housekeeper')",
        );
        expect(n?.n).toBe(3);
      });
    },
  );
}
