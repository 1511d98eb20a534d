import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Store } from "../store/store.js";
import { gatewayWithStubs } from "../testing/gateway-with-stubs.js";
import { duplex, seconds, unary } from "../testing/grpc-stubs.js";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";

for (const engine of engines) {
  describe.skipIf(!engine.available())(`one claim statement for several polls (${engine.name})`, () => {
    let handle: Awaited<ReturnType<(typeof engine)["open"]>>;
    let store: Store;
    let round = 0;
    beforeAll(async () => {
      handle = await engine.open();
      store = new Store(handle.db);
    });
    afterAll(() => handle.close());

    it("gives each poll at most its limit and its own lease, each job to one poll, the best jobs to the first", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.integer({ min: -3, max: 3 }), { maxLength: 30 }),
          fc.array(
            fc.record({
              limit: fc.integer({ min: 0, max: 12 }),
              leaseMs: fc.integer({ min: 1000, max: 9000 }),
            }),
            {
              minLength: 1,
              maxLength: 5,
            },
          ),
          async (priorities, polls) => {
            const q = `many-${engine.name}-${++round}`;
            await store.jobsEnqueue(priorities.map((priority) => newJob(q, { priority })));
            const asks = polls.map((p, i) => ({ ...p, workerId: `w${i}` }));
            const { jobs: claimed } = await store.jobsClaimMany({ queues: [q], polls: asks });
            const wanted = asks.reduce((n, a) => n + a.limit, 0);
            expect(claimed.flat()).toHaveLength(Math.min(wanted, priorities.length));
            expect(new Set(claimed.flat().map((j) => j.id)).size).toBe(claimed.flat().length);
            claimed.forEach((jobs, i) => {
              expect(jobs.length).toBeLessThanOrEqual(asks[i]?.limit ?? 0);
              for (const j of jobs) expect(j.queue).toBe(q);
              // One statement, one clock: a job's lease deadline differs from another poll's by exactly
              // the difference of the two polls' lease lengths.
              const first = claimed.findIndex((js) => js.length > 0);
              const base = claimed[first]?.[0];
              for (const j of jobs)
                if (base)
                  expect(j.leaseDeadlineMs - base.leaseDeadlineMs).toBeCloseTo(
                    (asks[i]?.leaseMs ?? 0) - (asks[first]?.leaseMs ?? 0),
                    3,
                  );
              const next = claimed.slice(i + 1).flat();
              // Best-first across polls: nothing a later poll got outranks what this one got.
              if (jobs.length > 0 && next.length > 0)
                expect(Math.min(...jobs.map((j) => j.priority))).toBeGreaterThanOrEqual(
                  Math.max(...next.map((j) => j.priority)),
                );
            });
            return true;
          },
        ),
        { numRuns: 25 },
      );
    });
  });
}

// Through a gateway: polls of different queue sets and sizes arriving together are merged where they
// can be, and still each gets only its own queues' jobs, at most its max_jobs, none twice.
describe("concurrent polls through one gateway", () => {
  const setup = gatewayWithStubs({ engine: "pglite" });

  it("answers each poll from its own queues within its max_jobs", async () => {
    const { stubs } = setup;
    const queues = ["ma", "mb", "mc"];
    for (const q of queues)
      for (let i = 0; i < 20; i++)
        await unary(stubs.producer, "Enqueue", { job: { queue: q, payload: Buffer.from("{}") } });
    const polls = Array.from({ length: 12 }, (_, i) => ({
      queues: i % 3 === 0 ? ["ma"] : i % 3 === 1 ? ["mb", "ma"] : ["mc"],
      max_jobs: 1 + (i % 5),
    }));
    const streams = polls.map(() => duplex(stubs.worker, "Claim"));
    const answers = await Promise.all(
      streams.map((s, i) => s.send({ ...polls[i], worker_id: `w${i}`, lease_duration: seconds(30) })),
    );
    for (const s of streams) s.end();
    const ids: string[] = [];
    answers.forEach((a, i) => {
      const poll = polls[i];
      expect(a.jobs.length).toBeLessThanOrEqual(poll?.max_jobs ?? 0);
      for (const j of a.jobs) expect(poll?.queues).toContain(j.queue);
      ids.push(...a.jobs.map((j: { id: string }) => j.id));
    });
    expect(new Set(ids).size).toBe(ids.length);
    // 36 jobs asked for, 60 ready: every poll was served in full.
    expect(ids).toHaveLength(polls.reduce((n, p) => n + p.max_jobs, 0));
  });
});
