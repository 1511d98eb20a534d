import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";

// taskq_producer, the role an application's database user is granted: it enqueues (taskq.enqueue,
// taskq.enqueue_batch) and can do nothing else, neither read a job nor settle, claim or change a queue.
for (const engine of engines) {
  describe.skipIf(!engine.available())(`the taskq_producer role on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let otherJob: string;
    const sql = <R extends object = Record<string, unknown>>(d: Db, text: string, params: unknown[] = []) =>
      d.query<R>({ name: "", text }, params);
    // SET LOCAL ROLE in a transaction of its own: on a pool, the next statement may use another
    // connection, and a refused statement aborts its transaction.
    const as = (role: string, text: string, params: unknown[] = []) =>
      db.transaction(async (tx) => {
        await sql(tx, `set local role ${role}`);
        return sql(tx, text, params);
      });
    const error = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: { code?: string }) => ({ code: e.code }),
      );

    beforeAll(async () => {
      ({ db, close } = await engine.open());
      const [row] = await sql<{ id: string }>(
        db,
        `select taskq.enqueue('secret', '{"card": "4111"}'::jsonb)::text as id`,
      );
      otherJob = row?.id ?? "";
      await sql(db, "select taskq.ensure_queue('secret', '{}'::jsonb, 'test')");
    });
    afterAll(() => close());

    it("exists once the migrations ran, and cannot log in", async () => {
      expect(await sql(db, "select rolcanlogin from pg_roles where rolname = 'taskq_producer'")).toEqual([
        { rolcanlogin: false },
      ]);
    });

    it("enqueues with both forms and the batch; the operator may too, the observer may not", async () => {
      const [one] = await as(
        "taskq_producer",
        `select taskq.enqueue('mail', '{"to": "ada"}'::jsonb)::text as id`,
      );
      const [bytes] = await as("taskq_producer", `select taskq.enqueue('mail', '\\x01'::bytea)::text as id`);
      const batch = await as(
        "taskq_producer",
        `select id::text from taskq.enqueue_batch('[{"queue": "mail"}]')`,
      );
      const [op] = await as("taskq_operator", `select taskq.enqueue('mail', '{}'::jsonb)::text as id`);
      const ids = [one?.id, bytes?.id, batch[0]?.id, op?.id];
      const jobs = await sql<{ id: string }>(
        db,
        "select id::text from taskq.jobs where queue = 'mail' order by id",
      );
      expect(jobs.map((j) => j.id)).toEqual(ids);
      expect(await error(as("taskq_observer", `select taskq.enqueue('mail', '{}'::jsonb)`))).toEqual({
        code: "42501",
      });
    });

    it("cannot read jobs, claim, settle, call the inside of the verbs, or change a queue", async () => {
      const refused = [
        "select payload from taskq.jobs",
        "select payload from taskq.live_jobs",
        "select payload from taskq.job_history",
        "select * from taskq.known_queues",
        "select * from taskq.queue_counters",
        "select * from taskq.queue_flow",
        "select * from taskq.list_jobs('secret', null)",
        "select * from taskq.queue_health(null)",
        `select * from taskq.jobs_claim(array['secret'], array[1], array[30000], array['thief'], null, array[]::text[])`,
        `select * from taskq.jobs_settle(array[${otherJob}]::bigint[], array[1], array['success'], array['\\x'::bytea],
           array[null::jsonb], array[null::int], null, array[null::int], true, 'g')`,
        `select * from taskq.enqueue_jobs(false, array['mail'], array['\\x'::bytea], array[''], array['{}'::jsonb])`,
        `select * from taskq.jobs_enqueue(array['mail'], array['\\x'::bytea], array[''], array[0], array[null],
           array[null::timestamptz], array[null::bigint], array[0], array[1], array[null], array['{}'::jsonb], null, true)`,
        `update taskq.jobs set state = 'cancelled' where id = ${otherJob}`,
        "delete from taskq.live_jobs",
        "select taskq.pause_queue('secret', 'eve')",
        "select taskq.clear_queue('secret', 'eve')",
        "select taskq.ensure_queue('secret', '{\"max_running\": 0}'::jsonb, 'eve')",
        `select taskq.retry_job(${otherJob}, 'eve')`,
      ];
      for (const text of refused)
        expect(await error(as("taskq_producer", text)), text).toEqual({ code: "42501" });
      const [job] = await sql(db, "select state, attempt from taskq.jobs where id = $1", [otherJob]);
      expect(job).toEqual({ state: "queued", attempt: 0 });
      const [queue] = await sql(db, "select paused from taskq.queues where name = 'secret'");
      expect(queue).toEqual({ paused: false });
    });
  });
}
