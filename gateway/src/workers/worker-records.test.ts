import { describe, expect, it, onTestFinished } from "vitest";
import { silentLogger } from "../log.js";
import { pgliteDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import { WorkerStore } from "../store/worker-store.js";
import { WorkerRecords } from "./worker-records.js";

/** A gateway's worker records on a migrated embedded database, with a clock the test moves. */
async function setup() {
  const db = await pgliteDb();
  onTestFinished(() => db.close());
  await migrate(db);
  let now = Date.now();
  const store = new WorkerStore(db);
  const records = new WorkerRecords(store, "gw-1", 5000, silentLogger(), () => now);
  return { store, records, advance: (ms: number) => (now += ms), now: () => now };
}

describe("WorkerRecords: a gateway's summary of its Claim streams", () => {
  it("counts the verdicts of the last minute only, and a poll waiting for work as polling now", async () => {
    const { store, records, advance, now } = await setup();
    const stream = {};
    records.polled(stream, { workerId: "w", queues: ["a"], maxJobs: 4, concurrency: 4, prefetch: 0 });
    records.answered(stream, "w", [{ queue: "a", reason: "THROTTLE", retryAfterMs: 100 }]);
    advance(30_000);
    records.polled(stream, { workerId: "w", queues: ["a"], maxJobs: 4 });
    records.answered(stream, "w", [{ queue: "a", reason: "PAUSED", retryAfterMs: 100 }]);
    records.polled(stream, { workerId: "w", queues: ["a"], maxJobs: 4 });
    advance(30_001);
    // The THROTTLE verdict is 60.001 s old; the PAUSED one 30.001 s. The poll is still out.
    const [r] = records.reports();
    expect(r).toMatchObject({ worker_id: "w", verdicts: { PAUSED: 1 }, max_jobs: 4, last_poll_ms: now() });
    expect(r?.verdicts.THROTTLE).toBeUndefined();
    // Answered and busy: it asks for nothing now, and its last poll stays when it was.
    records.answered(stream, "w", []);
    advance(1000);
    expect(records.reports()[0]).toMatchObject({ max_jobs: 0, last_poll_ms: now() - 1000 });
    await records.flush();
    expect((await store.workersList()).map((w) => [w.worker_id, w.gateway_id])).toEqual([["w", "gw-1"]]);
  });

  it("sums one worker id's streams, and forgets a ClaimOnce caller a minute after its last poll", async () => {
    const { records, advance } = await setup();
    const [s1, s2] = [{}, {}];
    records.polled(s1, { workerId: "w", queues: ["a"], maxJobs: 2, concurrency: 2, prefetch: 1 });
    records.polled(s2, { workerId: "w", queues: ["b"], maxJobs: 3, concurrency: 3, prefetch: 0 });
    records.polled(undefined, { workerId: "curl", queues: ["c"], maxJobs: 1 });
    records.answered(undefined, "curl", []);
    const byId = () => new Map(records.reports().map((r) => [r.worker_id, r]));
    expect(byId().get("w")).toMatchObject({
      streams: 2,
      queues: ["a", "b"],
      max_jobs: 5,
      concurrency: 5,
      prefetch: 1,
    });
    expect(byId().get("curl")).toMatchObject({ streams: 1, concurrency: null });
    advance(60_001);
    expect(byId().has("curl")).toBe(false);
    records.closed(s1);
    expect(byId().get("w")).toMatchObject({ streams: 1, queues: ["b"] });
  });

  it("stop removes this gateway's rows, leaving other gateways' alone", async () => {
    const { store, records } = await setup();
    await store.workersFlush(
      "gw-2",
      [
        {
          worker_id: "x",
          queues: ["a"],
          streams: 1,
          max_jobs: 1,
          concurrency: null,
          prefetch: null,
          last_poll_ms: Date.now(),
          verdicts: {},
        },
      ],
      60_000,
    );
    records.polled({}, { workerId: "w", queues: ["a"], maxJobs: 1 });
    await records.flush();
    expect((await store.workersList()).map((w) => w.worker_id)).toEqual(["w", "x"]);
    await records.stop();
    expect((await store.workersList()).map((w) => w.worker_id)).toEqual(["x"]);
  });
});
