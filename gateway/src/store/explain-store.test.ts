import { describe, expect, it, onTestFinished } from "vitest";
import { newJob } from "../testing/new-job.js";
import { pgliteDb } from "./db.js";
import { ExplainStore } from "./explain-store.js";
import { migrate } from "./migrate.js";
import { Store } from "./store.js";

/** Explain's reads on a migrated embedded database, at a `now` the test pins. */
async function setup() {
  const db = await pgliteDb();
  onTestFinished(() => db.close());
  await migrate(db);
  return { store: new Store(db), explain: new ExplainStore(db) };
}

describe("ExplainStore: the claim order as taskq.jobs_claim ranks it, at a pinned now", () => {
  it("without aging: priority first, then the oldest; ahead counts the ready jobs before", async () => {
    const { store, explain } = await setup();
    const t0 = Date.parse("2026-12-04T20:00:00Z");
    const [low, high, older] = await store.jobsEnqueue(
      [
        newJob("q", { priority: 0, runAt: new Date(t0 - 60_000) }),
        newJob("q", { priority: 5, runAt: new Date(t0) }),
        newJob("q", { priority: 0, runAt: new Date(t0 - 120_000) }),
      ],
      new Date(t0),
    );
    expect(await explain.nextJob("q", null, t0)).toBe(high?.id);
    const job = await explain.job(low?.id ?? "");
    if (!job) throw new Error("no job");
    // Ahead of the priority-0 job of t0 - 60 s: the priority-5 one and the older priority-0 one.
    expect(await explain.ahead(job, null, t0)).toBe(2);
    const first = await explain.job(older?.id ?? "");
    if (!first) throw new Error("no job");
    expect(await explain.ahead(first, null, t0)).toBe(1);
  });

  it("with aging: a job that waited gains a step per period and passes a better one", async () => {
    const { store, explain } = await setup();
    const t0 = Date.parse("2026-12-04T20:00:00Z");
    const [waited, fresh] = await store.jobsEnqueue(
      [
        newJob("q", { priority: 0, runAt: new Date(t0 - 150_000) }),
        newJob("q", { priority: 1, runAt: new Date(t0) }),
      ],
      new Date(t0),
    );
    const w = await explain.job(waited?.id ?? "");
    const f = await explain.job(fresh?.id ?? "");
    if (!w || !f) throw new Error("no job");
    // Aging 60 s: 150 s waited is 2 steps (0 + 2 > 1): the one that waited goes first.
    expect(await explain.nextJob("q", 60, t0)).toBe(waited?.id);
    expect(await explain.ahead(f, 60, t0)).toBe(1);
    expect(await explain.ahead(w, 60, t0)).toBe(0);
    // Aging 100 s: one step only (0 + 1 = 1), a tie the older one wins.
    expect(await explain.ahead(f, 100, t0)).toBe(1);
    // Aging 200 s: no step yet: priority decides.
    expect(await explain.nextJob("q", 200, t0)).toBe(fresh?.id);
    expect(await explain.ahead(w, 200, t0)).toBe(1);
  });
});
