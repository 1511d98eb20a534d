import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { type GrpcStubs, grpcStubs, unary } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// Plain @grpc/grpc-js workers parked on two production gateways (tokens, Postgres, Redis) and an
// application that enqueues with taskq.enqueue_batch in its own transaction, on its own connection: the
// polls wake at its commit, never before, and a rollback wakes nobody.
const ready = haveService("postgres") && haveService("redis");

interface ClaimAnswer {
  jobs: {
    id: string;
    queue: string;
    payload: Buffer;
    content_type: string;
    headers: Record<string, string>;
  }[];
}

describe.runIf(ready)("a worker parked on a production gateway and an enqueue in a transaction", () => {
  const secret = newToken();
  const tokens = [{ name: "w", roles: ["worker" as const], queues: null, sha256: hashToken(secret) }];
  let a: TestGateway;
  let b: TestGateway;
  let stubs: GrpcStubs[];
  let app: pg.Client;
  let listener: pg.Client;
  const heard: string[] = [];

  beforeAll(async () => {
    a = await startTestGateway({ engine: "postgres", config: { tokens } });
    b = await startTestGateway({ databaseUrl: a.databaseUrl ?? "", config: { tokens } });
    stubs = [grpcStubs(a.grpcUrl, secret), grpcStubs(b.grpcUrl, secret)];
    app = new pg.Client({ connectionString: a.databaseUrl ?? "" });
    await app.connect();
    listener = new pg.Client({ connectionString: a.databaseUrl ?? "" });
    await listener.connect();
    listener.on("notification", (n) => heard.push(n.payload ?? ""));
    await listener.query("listen taskq_jobs");
  }, 60_000);
  afterAll(async () => {
    for (const s of stubs ?? []) s.close();
    await app?.end();
    await listener?.end();
    await b?.stop();
    await a?.stop();
  });

  const park = (s: GrpcStubs, queue: string, waitS: number) => {
    const started = Date.now();
    return unary<ClaimAnswer>(s.worker, "ClaimOnce", {
      queues: [queue],
      max_jobs: 1,
      worker_id: "grpc-js",
      max_wait: { seconds: waitS, nanos: 0 },
    }).then((res) => ({ res, ms: Date.now() - started, at: Date.now() }));
  };
  const stillPending = (p: Promise<unknown>, ms: number) =>
    Promise.race([p.then(() => false), sleep(ms).then(() => true)]);

  it("wakes the polls on both gateways at the commit, with the jobs as enqueued", async () => {
    const polls = stubs.map((s) => park(s, "orders-mail", 20));
    await sleep(300); // both parked
    await app.query("begin");
    await app.query("create table if not exists public.orders (id serial primary key, job_id bigint)");
    const { rows } = await app.query<{ id: string }>("select id::text from taskq.enqueue_batch($1)", [
      JSON.stringify([
        { queue: "orders-mail", payload: { order: 1 }, headers: { tenant: "t1" } },
        { queue: "orders-mail", payload: { order: 2 } },
      ]),
    ]);
    await app.query("insert into public.orders (job_id) select unnest($1::bigint[])", [
      rows.map((r) => r.id),
    ]);
    // Not before the commit: both polls stay parked while the transaction is open.
    expect(await stillPending(Promise.race(polls), 500)).toBe(true);
    const committed = Date.now();
    await app.query("commit");
    const got = await Promise.all(polls);
    const claimed = got.flatMap((g) => g.res.jobs);
    expect(claimed.map((j) => j.id).sort()).toEqual(rows.map((r) => r.id).sort());
    expect(claimed.map((j) => JSON.parse(j.payload.toString())).sort((x, y) => x.order - y.order)).toEqual([
      { order: 1 },
      { order: 2 },
    ]);
    expect(claimed.every((j) => j.content_type === "application/json")).toBe(true);
    expect(claimed.find((j) => JSON.parse(j.payload.toString()).order === 1)?.headers).toEqual({
      tenant: "t1",
    });
    for (const g of got) {
      // Answered after the commit (never before it), and soon after: a notification, not a re-poll.
      expect(g.at).toBeGreaterThanOrEqual(committed);
      expect(g.at - committed).toBeLessThan(2000);
    }
  });

  it("a rolled-back enqueue wakes nobody: the polls wait their whole max_wait and get nothing", async () => {
    const polls = stubs.map((s) => park(s, "orders-never", 2));
    await sleep(300);
    await app.query("begin");
    await app.query(`select taskq.enqueue('orders-never', '{"order": 3}'::jsonb)`);
    await app.query("rollback");
    const got = await Promise.all(polls);
    for (const g of got) {
      expect(g.res.jobs).toEqual([]);
      expect(g.ms).toBeGreaterThanOrEqual(1900);
      expect(g.ms).toBeLessThan(10_000);
    }
    expect(heard).not.toContain("orders-never");
    const jobs = await app.query("select id from taskq.jobs where queue = 'orders-never'");
    expect(jobs.rows).toEqual([]);
  });
});
