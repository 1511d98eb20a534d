import { Client, Worker } from "@taskq/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const JOBS = 10_000;
const WORKERS = 20;

// Gateways on Postgres share the test Redis for their limiters.
const services = haveService("postgres") && haveService("redis");

describe.skipIf(!services)("two gateway instances on one Postgres", () => {
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    a = await startTestGateway({ engine: "postgres", config: { dbPoolSize: 8 } });
    b = await startTestGateway({ databaseUrl: a.databaseUrl ?? "", config: { dbPoolSize: 8 } });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  it(`settles each of ${JOBS} jobs exactly once with ${WORKERS} workers, none lost`, async () => {
    const client = new Client({ baseUrl: a.grpcUrl });
    const ids = new Set<string>();
    for (let i = 0; i < JOBS; i += 1000) {
      const batch = Array.from({ length: 1000 }, (_, k) => ({ queue: "cluster", payload: { n: i + k } }));
      for (const r of await client.enqueueBatch(batch)) ids.add(r.jobId);
    }
    expect(ids.size).toBe(JOBS);

    const runs = new Map<string, number>();
    let done = 0;
    let finished: () => void = () => {};
    const allDone = new Promise<void>((r) => {
      finished = r;
    });
    const workers = Array.from(
      { length: WORKERS },
      (_, w) =>
        new Worker({
          baseUrl: (w % 2 === 0 ? a : b).grpcUrl,
          queues: ["cluster"],
          concurrency: 10,
          handler: async (job) => {
            runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
            await new Promise((r) => setImmediate(r));
            if (++done === JOBS) finished();
          },
        }),
    );
    await Promise.all(workers.map((w) => w.start()));
    await Promise.race([allDone, new Promise((r) => setTimeout(r, 90_000))]);
    await Promise.all(workers.map((w) => w.stop()));

    // Exactly once: every job ran once, under its first lease, and the store agrees.
    expect(runs.size).toBe(JOBS);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect([...runs.keys()].every((id) => ids.has(id))).toBe(true);
    const rows = await a.store.db.query<{ state: string; attempt: number; n: number }>({
      name: "",
      text: "select state, attempt, count(*)::int as n from taskq.jobs group by state, attempt",
    });
    expect(rows).toEqual([{ state: "succeeded", attempt: 1, n: JOBS }]);
    const served = workers.map((w) => w.snapshot());
    expect(served.reduce((s, x) => s + x.succeeded, 0)).toBe(JOBS);
    expect(served.reduce((s, x) => s + x.settleRefused, 0)).toBe(0);
  }, 120_000);
});
