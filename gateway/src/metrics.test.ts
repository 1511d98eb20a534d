import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Metrics } from "./metrics.js";
import { type Db, pgliteDb } from "./store/db.js";
import { migrate } from "./store/migrate.js";
import { QueueStore } from "./store/queue-store.js";
import { Store } from "./store/store.js";

describe("a metrics scrape", () => {
  let db: Db;
  let queues: QueueStore;
  let metrics: Metrics;
  let listReads = 0;

  beforeAll(async () => {
    db = await pgliteDb();
    await migrate(db);
    queues = new QueueStore(db);
    // The real store, its queue list reads counted.
    const counted = Object.create(queues) as QueueStore;
    counted.queuesList = () => {
      listReads++;
      return queues.queuesList();
    };
    metrics = new Metrics(new Store(db), counted);
    await queues.queueEnsure("adaptive", {}, "test");
    await queues.queueEnsure("guarded", {}, "test");
    await queues.queueSetAdaptive("adaptive", 1, 8, 500, "test");
    await queues.breakerConfig("guarded", 5, 30, 1, "test");
    await queues.breakerTrip("guarded", "test");
  });
  afterAll(() => db.close());

  it("reads the queue list once for every gauge drawn from it", async () => {
    listReads = 0;
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^taskq_adaptive_max_running\{queue="adaptive"\} \d+$/m);
    expect(text).toContain('taskq_breaker_state{queue="guarded",state="open"} 1');
    expect(listReads).toBe(1);
  });

  it("reads it again at the next scrape, seeing what changed", async () => {
    await queues.breakerClose("guarded", "test");
    listReads = 0;
    const text = await metrics.registry.metrics();
    expect(text).toContain('taskq_breaker_state{queue="guarded",state="closed"} 1');
    expect(listReads).toBe(1);
  });
});
