import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";
import { QueueStore } from "./queue-store.js";

/**
 * Migration 0020: what makes a queue known (taskq.known_queues, which every list reads), on each
 * engine: an enqueue, a schedule's fire, a settings verb, the config file's names.
 */
for (const engine of engines) {
  describe.skipIf(!engine.available())(`known queues on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    const sql = (text: string, params: unknown[] = []) =>
      db.query<Record<string, unknown>>({ name: "", text }, params);
    const known = async () =>
      (await sql("select name from taskq.known_queues order by name")).map((r) => r.name);

    beforeAll(async () => {
      ({ db, close } = await engine.open());
    });
    afterAll(() => close());

    it("an enqueue, a schedule's fire, a settings verb and the config's names each make one known", async () => {
      expect(await known()).toEqual([]);
      await sql(
        `select * from taskq.jobs_enqueue(array['sent'], array['\\x'::bytea], array[''], array[0], array[null::text],
           array[null::timestamptz], array[0::bigint], array[0], array[1], array[null::text], array['{}'::jsonb], null, true)`,
      );
      await sql(
        `select taskq.create_schedule('nightly', '{"cron": "0 3 * * *", "queue": "planned"}', null, 'ops')`,
      );
      // A schedule makes its queue known when it enqueues, as any producer does.
      expect(await known()).toEqual(["sent"]);
      await sql(
        "select taskq.fire_schedule(s.id, now(), now(), 1, null) from taskq.schedules s where s.name = 'nightly'",
      );
      await sql("select taskq.ensure_queue('set-up', '{}', 'ops')");
      await new QueueStore(db).queuesNote(["from-config"]);
      expect(await known()).toEqual(["from-config", "planned", "sent", "set-up"]);
      await expect(new QueueStore(db).queuesNote(["bad name"])).rejects.toThrow(/^queue /);
    });

    it("lists a queue only enqueued to with every gate off, as one whose settings were cleared", async () => {
      const queues = new QueueStore(db);
      await sql("select taskq.ensure_queue('cleared', '{}', 'ops')");
      const list = await queues.queuesList();
      const settings = (name: string) => list.find((q) => q.name === name)?.settings;
      expect(settings("sent")).toEqual(settings("cleared"));
      expect(await queues.queueGet("sent")).toEqual(settings("cleared"));
      await expect(queues.queueGet("never")).rejects.toThrow(
        "queue never not found (never enqueued to, no settings)",
      );
      expect(
        await sql(
          "select queue, paused, notify_mode, breaker_state from taskq.queue_flow where queue = 'sent'",
        ),
      ).toEqual([{ queue: "sent", paused: false, notify_mode: "always", breaker_state: "closed" }]);
    });
  });
}
