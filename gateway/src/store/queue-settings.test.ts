import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Profiles } from "../flow/profiles.js";
import { engines, knownQueues } from "../testing/services.js";
import type { Db } from "./db.js";
import { parseQueueSettings, StoredSettingsError } from "./queue-settings.js";
import { QueueStore } from "./queue-store.js";

/** Settings read back from Postgres are parsed: a malformed row fails naming the queue (or key) and field. */
for (const engine of engines) {
  describe.skipIf(!engine.available())(`stored settings on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let store: QueueStore;
    const sql = (text: string, params: unknown[] = []) => db.query({ name: "", text }, params);

    beforeAll(async () => {
      ({ db, close } = await engine.open());
      store = new QueueStore(db);
      await knownQueues(db, "fine", "zero-rate", "half-throttle", "ajar");
    });
    afterAll(() => close());

    it("reads well-formed settings as the verbs wrote them", async () => {
      await store.queueSetThrottle("fine", 5, 60_000, "alice");
      await store.breakerConfig("fine", 3, 30, null, "alice");
      const fine = (await store.queuesGet(["fine"])).get("fine");
      expect(fine).toMatchObject({
        paused: false,
        throttle: { limit: 5, period_ms: 60_000, source: "console" },
        breaker: { failure_threshold: 3, cooldown_seconds: 30, half_open_successes: 1, state: "closed" },
      });
      expect(typeof fine?.throttle_version).toBe("number");
    });

    it("refuses a value no verb would write, naming the queue and the field", async () => {
      await sql("update taskq.queues set claim_rate_per_minute = 0 where name = 'zero-rate'");
      await expect(store.queuesGet(["zero-rate"])).rejects.toThrow(StoredSettingsError);
      await expect(store.queuesGet(["zero-rate"])).rejects.toThrow(
        /^queue "zero-rate" has malformed stored settings at claim_rate_per_minute: .*>=1.*0/,
      );
      // The listing and the cached profiles fail the same way instead of handing the value on.
      await expect(store.queuesList()).rejects.toThrow(/queue "zero-rate" .* claim_rate_per_minute/);
      await expect(new Profiles(store).queueSettings(["zero-rate"])).rejects.toThrow(/zero-rate/);
    });

    it("refuses a half-written throttle and an unknown breaker state", async () => {
      await sql(
        "update taskq.queues set throttle_limit = 5, throttle_source = 'console' where name = 'half-throttle'",
      );
      await expect(store.queuesGet(["half-throttle"])).rejects.toThrow(
        /^queue "half-throttle" has malformed stored settings at throttle\.period_ms: .*number.*null/,
      );
      // The verb returns the settings too, so it reports the row it found.
      await expect(store.queuePause("half-throttle", "alice")).rejects.toThrow(/throttle\.period_ms/);
    });

    it("refuses a malformed flow limit, naming the key and the field", async () => {
      await sql(
        "insert into taskq.flow_limits (flow_key, rate_per_minute, burst) values ('tenant:9', 60, 0)",
      );
      await expect(store.flowLimitsList()).rejects.toThrow(
        /^flow key "tenant:9" has malformed stored settings at burst: /,
      );
      await sql("delete from taskq.flow_limits where flow_key = 'tenant:9'");
      await expect(store.flowLimitsList()).resolves.toEqual([]);
    });
  });
}

describe("parseQueueSettings", () => {
  const healthy = {
    paused: false,
    max_running: null,
    throttle: null,
    claim_rate_per_minute: null,
    claim_burst: null,
    ramp_seconds: null,
    ramp_started_at: null,
    priority_aging_seconds: null,
    default_ttl_seconds: null,
    notify_mode: "always",
    adaptive: null,
    breaker: null,
  };
  const breaker = {
    failure_threshold: 3,
    cooldown_seconds: 30,
    half_open_successes: 1,
    rate: null,
    latency: null,
    state: "closed",
    failure_streak: 0,
    opened_total: 0,
    tripped_at: null,
    probe_job_id: null,
    probe_successes: 0,
  };

  it("passes a healthy row through", () => {
    expect(parseQueueSettings("q", { ...healthy, breaker })).toEqual({ ...healthy, breaker });
  });

  it.each([
    [{ ...healthy, paused: "yes" }, /queue "q" .* at paused: .*boolean/],
    [{ ...healthy, notify_mode: "sometimes" }, /at notify_mode: /],
    [{ ...healthy, breaker: { ...breaker, state: "ajar" } }, /at breaker\.state: /],
    [
      { ...healthy, breaker: { ...breaker, rate: { failure_ratio: 2, window_seconds: 60, min_volume: 1 } } },
      /at breaker\.rate\.failure_ratio: /,
    ],
    [{ ...healthy, max_running: 1.5 }, /at max_running: /],
    [null, /queue "q" has malformed stored settings: .*Object/],
  ])("refuses %j", (raw, message) => {
    expect(() => parseQueueSettings("q", raw)).toThrow(message);
  });
});
