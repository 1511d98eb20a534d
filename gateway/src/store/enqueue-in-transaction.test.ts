import { setTimeout as sleep } from "node:timers/promises";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";

// taskq.enqueue and taskq.enqueue_batch inside an application's own transaction, which also writes a
// table of the application's: the job exists if and only if that transaction commits, on both engines.
for (const engine of engines) {
  describe.skipIf(!engine.available())(`enqueue in the application's transaction on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    const sql = <R extends object = Record<string, unknown>>(d: Db, text: string, params: unknown[] = []) =>
      d.query<R>({ name: "", text }, params);
    const jobsOf = (queue: string) =>
      sql<{ id: string; state: string }>(
        db,
        "select id::text, state from taskq.jobs where queue = $1 order by id",
        [queue],
      );
    const known = async (queue: string) =>
      (await sql(db, "select 1 from taskq.known_queues where name = $1", [queue])).length === 1;
    /** Runs `fn` in a transaction, then rolls it back. */
    const rolledBack = async (fn: (tx: Db) => Promise<unknown>) => {
      const rollback = new Error("rollback");
      await expect(
        db.transaction(async (tx) => {
          await fn(tx);
          throw rollback;
        }),
      ).rejects.toBe(rollback);
    };
    // Everything the notifications of taskq_jobs said, in order.
    const heard: string[] = [];
    let unlisten: () => Promise<void>;

    beforeAll(async () => {
      ({ db, close } = await engine.open());
      await sql(db, "create table public.orders (id serial primary key, item text not null, job_id bigint)");
      unlisten = await db.listen(["taskq_jobs"], (_channel, queue) => heard.push(queue));
    });
    afterAll(async () => {
      await unlisten?.();
      await close();
    });

    /** Waits until `queue` was heard, or `ms` passed; says whether it was. */
    const hear = async (queue: string, ms = 2000) => {
      const until = Date.now() + ms;
      while (!heard.includes(queue) && Date.now() < until) await sleep(10);
      return heard.includes(queue);
    };

    it("commits the job with the application's row, and wakes listeners at the commit", async () => {
      const id = await db.transaction(async (tx) => {
        const [job] = await sql<{ id: string }>(
          tx,
          `select taskq.enqueue('receipts', '{"order": 1}'::jsonb)::text as id`,
        );
        await sql(tx, "insert into public.orders (item, job_id) values ('book', $1)", [job?.id]);
        // Not before the commit: the job is not there for anyone else yet, and nobody was told. (PGlite is
        // one session, which this transaction holds: nobody else to ask.)
        if (engine.name === "postgres") expect(await jobsOf("receipts")).toEqual([]);
        expect(heard).not.toContain("receipts");
        return job?.id;
      });
      expect(id).toMatch(/^[1-9][0-9]*$/);
      expect(await jobsOf("receipts")).toEqual([{ id, state: "queued" }]);
      expect(await sql(db, "select item from public.orders where job_id = $1", [id])).toEqual([
        { item: "book" },
      ]);
      expect(await known("receipts")).toBe(true);
      expect(await hear("receipts")).toBe(true);
    });

    it("rolls back to nothing: no job, no known queue, no wake-up, no application row", async () => {
      await rolledBack(async (tx) => {
        await sql(tx, "insert into public.orders (item) values ('rolled-back')");
        await sql(tx, `select taskq.enqueue('never', '{}'::jsonb)`);
        await sql(tx, `select * from taskq.enqueue_batch('[{"queue": "never"}, {"queue": "never-either"}]')`);
      });
      // A commit after it is heard: anything the rollback had sent would have come first.
      await db.transaction((tx) => sql(tx, `select taskq.enqueue('after-rollback', '{}'::jsonb)`));
      expect(await hear("after-rollback")).toBe(true);
      expect(heard.filter((q) => q.startsWith("never"))).toEqual([]);
      expect(await jobsOf("never")).toEqual([]);
      expect(await jobsOf("never-either")).toEqual([]);
      expect(await known("never")).toBe(false);
      expect(await known("never-either")).toBe(false);
      expect(await sql(db, "select 1 from taskq.queue_counters where queue like 'never%'")).toEqual([]);
      expect(await sql(db, "select 1 from public.orders where item = 'rolled-back'")).toEqual([]);
    });

    it("a savepoint rolled back takes its job with it; the rest of the transaction commits", async () => {
      await db.transaction(async (tx) => {
        await sql(tx, `select taskq.enqueue('saved', '{"n": 1}'::jsonb)`);
        await sql(tx, "savepoint before_second");
        await sql(tx, `select taskq.enqueue('saved', '{"n": 2}'::jsonb)`);
        await sql(tx, `select taskq.enqueue('saved-never', '{"n": 3}'::jsonb)`);
        await sql(tx, "rollback to savepoint before_second");
        await sql(tx, `select taskq.enqueue('saved', '{"n": 4}'::jsonb)`);
      });
      const payloads = await sql<{ p: string }>(
        db,
        "select convert_from(payload, 'UTF8') as p from taskq.jobs where queue = 'saved' order by id",
      );
      expect(payloads.map((r) => JSON.parse(r.p))).toEqual([{ n: 1 }, { n: 4 }]);
      expect(await known("saved-never")).toBe(false);
      expect(await hear("saved")).toBe(true);
      expect(heard).not.toContain("saved-never");
    });

    it("an idempotency key returns the job that holds it, and the batch says it was a duplicate", async () => {
      const key = { idempotency_key: "order-7" };
      const [first] = await sql<{ id: string }>(
        db,
        "select taskq.enqueue('keyed', '{}'::jsonb, $1)::text as id",
        [key],
      );
      const [again] = await sql<{ id: string }>(
        db,
        "select taskq.enqueue('keyed', '\\x01'::bytea, $1)::text as id",
        [key],
      );
      expect(again?.id).toBe(first?.id);
      const rows = await sql<{ ord: number; id: string; duplicate: boolean }>(
        db,
        "select ord, id::text, duplicate from taskq.enqueue_batch($1)",
        [
          JSON.stringify([
            { queue: "keyed", idempotency_key: "order-7" },
            { queue: "keyed", idempotency_key: "order-8" },
            { queue: "keyed" },
            { queue: "keyed", idempotency_key: "order-8" },
            { queue: "other-keyed", idempotency_key: "order-7" },
          ]),
        ],
      );
      const jobs = await jobsOf("keyed");
      expect(jobs.map((j) => j.id)).toEqual([first?.id, rows[1]?.id, rows[2]?.id]);
      expect(rows).toEqual([
        { ord: 0, id: first?.id, duplicate: true },
        { ord: 1, id: expect.any(String), duplicate: false },
        { ord: 2, id: expect.any(String), duplicate: false },
        { ord: 3, id: rows[1]?.id, duplicate: true },
        // A key is a queue's: the same key on another queue is another job.
        { ord: 4, id: expect.any(String), duplicate: false },
      ]);
      expect(new Set(rows.map((r) => r.id)).size).toBe(4);
    });

    it("stores every option as the RPC would: the job's columns say what was asked", async () => {
      const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      const [row] = await sql<{ id: string }>(
        db,
        "select taskq.enqueue('opts', '\\x00ff'::bytea, $1) as id",
        [
          {
            priority: -5,
            flow_key: "tenant-1",
            ttl_seconds: 60,
            max_attempts: 3,
            idempotency_key: "k-opts",
            headers: { traceparent, tenant: "t1" },
            content_type: "application/x-thing",
            delay_ms: 90_000,
          },
        ],
      );
      const [job] = await sql(
        db,
        `select encode(payload, 'hex') as payload, content_type, priority, flow_key, max_attempts, idempotency_key,
           headers, state, extract(epoch from run_at - enqueued_at)::float8 as delay_s,
           extract(epoch from expires_at - enqueued_at)::float8 as ttl_s
         from taskq.jobs where id = $1`,
        [row?.id],
      );
      expect(job).toEqual({
        payload: "00ff",
        content_type: "application/x-thing",
        priority: -5,
        flow_key: "tenant-1",
        max_attempts: 3,
        idempotency_key: "k-opts",
        headers: { traceparent, tenant: "t1" },
        state: "scheduled",
        delay_s: 90,
        ttl_s: 60,
      });

      // The defaults: JSON as application/json, bytes as '', 25 attempts, priority 0, ready now.
      const defaults = await sql<{ id: string }>(db, "select id::text from taskq.enqueue_batch($1)", [
        JSON.stringify([
          { queue: "opts", payload: { a: [1, "two"] } },
          { queue: "opts", payload_base64: Buffer.from("hi").toString("base64") },
          { queue: "opts" },
          { queue: "opts", run_at: "2031-02-03T04:05:06.789Z", flow_key: "", max_attempts: 0 },
        ]),
      ]);
      const stored = await sql(
        db,
        `select convert_from(payload, 'UTF8') as payload, content_type, priority, flow_key, max_attempts, state,
           headers, run_at <= now() as ready, run_at
         from taskq.jobs where id = any($1::bigint[]) order by id`,
        [defaults.map((d) => d.id)],
      );
      expect(stored).toEqual([
        expect.objectContaining({
          content_type: "application/json",
          priority: 0,
          max_attempts: 25,
          ready: true,
        }),
        expect.objectContaining({
          payload: "hi",
          content_type: "",
          flow_key: null,
          headers: {},
          state: "queued",
        }),
        expect.objectContaining({ payload: "", content_type: "", state: "queued" }),
        expect.objectContaining({ state: "scheduled", flow_key: null, max_attempts: 25 }),
      ]);
      expect(JSON.parse(String(stored[0]?.payload))).toEqual({ a: [1, "two"] });
      expect((stored[3]?.run_at as Date | undefined)?.toISOString()).toBe("2031-02-03T04:05:06.789Z");
    });

    it("reads base64 as Postgres's encode() writes it, a line break every 76 characters", async () => {
      const bytes = Buffer.from(Array.from({ length: 200 }, (_, i) => i));
      const [row] = await sql<{ id: string; breaks: boolean }>(
        db,
        `with b as (select encode($1::bytea, 'base64') as b64)
         select (select id::text from taskq.enqueue_batch(jsonb_build_array(
                  jsonb_build_object('queue', 'b64', 'payload_base64', b.b64)))) as id,
                position(E'\n' in b.b64) > 0 as breaks
         from b`,
        [bytes],
      );
      expect(row?.breaks).toBe(true);
      const [stored] = await sql<{ payload: Uint8Array }>(
        db,
        "select payload from taskq.jobs where id = $1",
        [row?.id],
      );
      expect(Buffer.from(stored?.payload ?? [])).toEqual(bytes);
    });

    it("takes the payload limit and default attempts from the database's settings", async () => {
      await db.transaction(async (tx) => {
        await sql(tx, "set local taskq.max_payload_bytes = 4");
        await sql(tx, "set local taskq.default_max_attempts = 2");
        const [row] = await sql<{ id: string }>(
          tx,
          `select taskq.enqueue('limits', '\\x01020304'::bytea)::text as id`,
        );
        const [job] = await sql(tx, "select max_attempts from taskq.jobs where id = $1", [row?.id]);
        expect(job).toEqual({ max_attempts: 2 });
      });
      await expect(
        db.transaction(async (tx) => {
          await sql(tx, "set local taskq.max_payload_bytes = 4");
          await sql(tx, `select taskq.enqueue('limits', '\\x0102030405'::bytea)`);
        }),
      ).rejects.toMatchObject({ code: "22023", message: "payload must be at most 4 bytes (got 5)" });
    });

    // 1,000 transactions, each committed or rolled back at random (some through a savepoint), each on a
    // queue of its own: the jobs, the known queues and the notifications are exactly the committed ones.
    it("property: after random commits and rollbacks, exactly the committed jobs exist", async () => {
      const step = fc.record({
        commit: fc.boolean(),
        jobs: fc.integer({ min: 1, max: 3 }),
        batch: fc.boolean(),
        savepoint: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1000, maxLength: 1000 }), async (steps) => {
          const prefix = `prop-${Math.random().toString(36).slice(2, 8)}-`;
          const committed = new Map<string, string[]>();
          for (const [i, s] of steps.entries()) {
            const queue = `${prefix}${i}`;
            const work = async (tx: Db) => {
              const ids: string[] = [];
              if (s.batch) {
                const jobs = Array.from({ length: s.jobs }, (_, n) => ({ queue, payload: { n } }));
                const rows = await sql<{ id: string }>(tx, "select id::text from taskq.enqueue_batch($1)", [
                  JSON.stringify(jobs),
                ]);
                ids.push(...rows.map((r) => r.id));
              } else {
                for (let n = 0; n < s.jobs; n++) {
                  const [r] = await sql<{ id: string }>(
                    tx,
                    "select taskq.enqueue($1, $2::jsonb)::text as id",
                    [queue, { n }],
                  );
                  ids.push(r?.id ?? "");
                }
              }
              await sql(tx, "insert into public.orders (item, job_id) values ($1, $2)", [queue, ids[0]]);
              return ids;
            };
            if (s.savepoint) {
              // The enqueue in a savepoint that is rolled back or released; the transaction commits.
              const ids = await db.transaction(async (tx) => {
                await sql(tx, "savepoint s");
                const got = await work(tx);
                await sql(tx, s.commit ? "release savepoint s" : "rollback to savepoint s");
                return got;
              });
              if (s.commit) committed.set(queue, ids);
            } else if (s.commit) {
              committed.set(queue, await db.transaction(work));
            } else {
              await rolledBack(work);
            }
          }
          const jobs = await sql<{ queue: string; ids: string[] }>(
            db,
            "select queue, array_agg(id::text order by id) as ids from taskq.jobs where queue like $1 group by queue",
            [`${prefix}%`],
          );
          expect(new Map(jobs.map((j) => [j.queue, j.ids]))).toEqual(committed);
          const queues = await sql<{ name: string }>(
            db,
            "select name from taskq.known_queues where name like $1",
            [`${prefix}%`],
          );
          expect(new Set(queues.map((q) => q.name))).toEqual(new Set(committed.keys()));
          const orders = await sql<{ item: string }>(
            db,
            "select item from public.orders where item like $1",
            [`${prefix}%`],
          );
          expect(new Set(orders.map((o) => o.item))).toEqual(new Set(committed.keys()));
          // Every committed queue was heard, and nothing else: a commit after the last step is heard
          // after anything the steps sent.
          await db.transaction((tx) => sql(tx, "select taskq.enqueue($1, '{}'::jsonb)", [`${prefix}end`]));
          expect(await hear(`${prefix}end`, 10_000)).toBe(true);
          const woken = new Set(heard.filter((q) => q.startsWith(prefix) && q !== `${prefix}end`));
          expect(woken).toEqual(new Set(committed.keys()));
        }),
        { numRuns: 1 },
      );
    }, 120_000);
  });
}
