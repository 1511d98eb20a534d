import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalPgBouncer, PGBOUNCER, startPgBouncer } from "../testing/pgbouncer.js";
import { freshPostgres, haveCommand, haveService } from "../testing/services.js";

// Two applications' transactions enqueueing with one idempotency key at once make one job: the second
// waits for the first's commit, then is answered with its job (or, after a rollback, inserts its own).
// On Postgres directly, and through PgBouncer in transaction pooling mode, where each transaction is on
// a server connection of the pool's choosing.
const postgres = haveService("postgres");
const bouncerInstalled = postgres && haveCommand(PGBOUNCER, "install pgbouncer (Debian) to run them");

describe.skipIf(!postgres)("two transactions enqueueing one idempotency key", () => {
  let fresh: Awaited<ReturnType<typeof freshPostgres>>;
  let bouncer: LocalPgBouncer | undefined;
  const clients: pg.Client[] = [];
  beforeAll(async () => {
    fresh = await freshPostgres();
    if (bouncerInstalled) bouncer = await startPgBouncer();
  });
  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => {});
    await bouncer?.stop();
    await fresh?.drop();
  });

  const connect = async (url: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    clients.push(c);
    return c;
  };
  /** Whether `p` is still pending after `ms`. */
  const pendingAfter = async (p: Promise<unknown>, ms: number) =>
    Promise.race([p.then(() => false), sleep(ms).then(() => true)]);

  const routes = [
    { name: "directly", url: () => fresh.url, run: true },
    {
      name: "through PgBouncer (transaction mode)",
      url: () => bouncer?.url(fresh.url) ?? "",
      run: bouncerInstalled,
    },
  ];
  for (const route of routes) {
    describe.runIf(route.run)(route.name, () => {
      it("the second waits for the first's commit, then gets its job: one job", async () => {
        const key = `k-${route.name.length}-commit`;
        const [a, b] = [await connect(route.url()), await connect(route.url())];
        await a.query("begin");
        const first = await a.query(`select taskq.enqueue('once', '{"from": "a"}'::jsonb, $1)::text as id`, [
          { idempotency_key: key },
        ]);
        await b.query("begin");
        const second = b.query(
          `select id::text, duplicate from taskq.enqueue_batch(jsonb_build_array(jsonb_build_object('queue', 'once', 'idempotency_key', $1::text)))`,
          [key],
        );
        expect(await pendingAfter(second, 300)).toBe(true);
        await a.query("commit");
        expect((await second).rows).toEqual([{ id: first.rows[0]?.id, duplicate: true }]);
        await b.query("commit");
        const jobs = await a.query(
          "select id::text, convert_from(payload, 'UTF8') as p from taskq.jobs where idempotency_key = $1",
          [key],
        );
        expect(jobs.rows).toEqual([{ id: first.rows[0]?.id, p: '{"from": "a"}' }]);
      });

      it("after the first rolls back, the second inserts its own", async () => {
        const key = `k-${route.name.length}-rollback`;
        const [a, b] = [await connect(route.url()), await connect(route.url())];
        await a.query("begin");
        const first = await a.query(`select taskq.enqueue('once', '{"from": "a"}'::jsonb, $1)::text as id`, [
          { idempotency_key: key },
        ]);
        await b.query("begin");
        const second = b.query(`select taskq.enqueue('once', '{"from": "b"}'::jsonb, $1)::text as id`, [
          { idempotency_key: key },
        ]);
        expect(await pendingAfter(second, 300)).toBe(true);
        await a.query("rollback");
        const got = (await second).rows[0]?.id;
        await b.query("commit");
        expect(got).not.toBe(first.rows[0]?.id);
        const jobs = await a.query(
          "select id::text, convert_from(payload, 'UTF8') as p from taskq.jobs where idempotency_key = $1",
          [key],
        );
        expect(jobs.rows).toEqual([{ id: got, p: '{"from": "b"}' }]);
      });

      it("commits a job with the application's row and leaves nothing of a rollback", async () => {
        const app = await connect(route.url());
        const listener = await connect(fresh.url);
        const heard: string[] = [];
        listener.on("notification", (n) => heard.push(n.payload ?? ""));
        await listener.query("listen taskq_jobs");
        const queue = `routed-${route.name.length}`;
        await app.query("create table if not exists public.orders (id serial primary key, job_id bigint)");
        await app.query("begin");
        await app.query(`select taskq.enqueue($1, '{}'::jsonb)`, [`${queue}-never`]);
        await app.query("insert into public.orders (job_id) values (0)");
        await app.query("rollback");
        await app.query("begin");
        const { rows } = await app.query(`select taskq.enqueue($1, '{}'::jsonb)::text as id`, [queue]);
        await app.query("insert into public.orders (job_id) values ($1)", [rows[0]?.id]);
        await app.query("commit");
        const until = Date.now() + 5000;
        while (!heard.includes(queue) && Date.now() < until) await sleep(10);
        expect(heard).toEqual([queue]);
        const jobs = await app.query("select id::text from taskq.jobs where queue like $1", [`${queue}%`]);
        expect(jobs.rows).toEqual([{ id: rows[0]?.id }]);
        const orders = await app.query("select job_id::text from public.orders where job_id in (0, $1)", [
          rows[0]?.id,
        ]);
        expect(orders.rows).toEqual([{ job_id: rows[0]?.id }]);
      });
    });
  }
});
