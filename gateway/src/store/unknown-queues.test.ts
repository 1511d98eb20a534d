import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NotFoundError } from "../errors.js";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";

/**
 * Migration 0012: a verb on a queue name never seen (no settings, no jobs, no schedule) is not found,
 * naming it, and writes nothing; ensure_queue creates. The same from psql and through QueueStore.
 */
for (const engine of engines) {
  describe.skipIf(!engine.available())(`queues never seen on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let queues: QueueStore;
    const sql = (text: string, params: unknown[] = []) =>
      db.query<Record<string, unknown>>({ name: "", text }, params);
    const error = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: { code?: string; message?: string }) => ({ code: e.code, message: e.message }),
      );
    const traces = async (queue: string) => ({
      settings: (await sql("select 1 from taskq.queues where name = $1", [queue])).length,
      audit: (await sql("select 1 from taskq.queue_audit where queue = $1", [queue])).length,
    });

    beforeAll(async () => {
      ({ db, close } = await engine.open());
      queues = new QueueStore(db);
    });
    afterAll(() => close());

    it("every operator verb answers not found naming the queue, and writes nothing", async () => {
      const notFound = {
        code: "P0002",
        message: "queue mial not found (no jobs, no settings): ensure_queue creates it",
      };
      for (const call of [
        "taskq.pause_queue('mial', 'ops')",
        "taskq.resume_queue('mial', 'ops')",
        "taskq.clear_queue('mial', 'ops')",
        "taskq.set_queue_concurrency('mial', 3, 'ops')",
        "taskq.set_queue_throttle('mial', 10, 60000, 'ops')",
        "taskq.delete_queue_throttle('mial', 'ops')",
        "taskq.set_priority_aging('mial', 60, 'ops')",
        "taskq.set_breaker_config('mial', 5, 30, 1, 'ops')",
        "taskq.set_breaker_rate('mial', null, null, null, 'ops')",
        "taskq.set_breaker_latency('mial', null, null, null, 'ops')",
        "taskq.trip_breaker('mial', 'ops')",
        "taskq.close_breaker('mial', 'ops')",
        "taskq.redrive_failed('mial', 10, 'ops', 0)",
      ]) {
        expect({ call, err: await error(sql(`select ${call}`)) }).toEqual({ call, err: notFound });
      }
      expect(await traces("mial")).toEqual({ settings: 0, audit: 0 });
      await expect(queues.queuePause("mial", "ops")).rejects.toThrow(new NotFoundError(notFound.message));
      // A bad name is still refused as such.
      expect(await error(sql("select taskq.pause_queue('bad name', 'ops')"))).toMatchObject({
        code: "22023",
      });
    });

    it("ensure_queue creates it, and then every verb works", async () => {
      await sql("select taskq.ensure_queue('mail', '{}', 'ops')");
      expect((await queues.queuePause("mail", "ops")).paused).toBe(true);
      expect(await traces("mail")).toEqual({ settings: 1, audit: 2 });
    });

    it("a queue with jobs, or a schedule feeding it, is known though it has no settings yet", async () => {
      await sql(
        "insert into taskq.jobs (queue, state, payload, max_attempts, run_at, enqueued_at) values ('busy', 'succeeded', '\\x', 1, now(), now())",
      );
      expect((await queues.queueSetConcurrency("busy", 2, "ops")).max_running).toBe(2);
      await sql(
        `select taskq.create_schedule('nightly', '{"cron": "0 3 * * *", "queue": "planned"}', null, 'ops')`,
      );
      expect((await queues.queuePause("planned", "ops")).paused).toBe(true);
      expect(await sql("select taskq.redrive_failed('busy', 10, 'ops', 0)::text as n")).toEqual([{ n: "0" }]);
    });
  });
}
